#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/), deterministically.

Each seed is a short prefix that steers the decoding in fuzz_common.h (size mode, image,
mask and model styles, capacity styles) followed by pseudo-random bytes. The seeds cover
every size mode (0 x N, N x 0, 1 x 1, 1 x N, N x 1, small and larger grids) and every
style once or more; libFuzzer grows the corpus from there (scripts/fuzz.sh, FUZZ_MERGE=1).
"""

import random
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent


def size_bytes(mode: int, a: int = 0, b: int = 0) -> bytes:
    return bytes([mode]) + struct.pack("<HH", a, b)


def write(target: str, name: str, data: bytes) -> None:
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def main() -> None:
    rng = random.Random(20240611)

    def tail(n: int) -> bytes:
        return bytes(rng.randrange(256) for _ in range(n))

    sizes = [(0, 5, 0), (1, 3, 0), (2, 0, 0), (3, 40, 0), (4, 40, 0), (5, 3, 4), (6, 11, 11), (8, 63, 30), (9, 127, 31)]
    # max-flow: threads_a, threads_b, plan, size, terminal style, n-link style, off-grid, invalid, then values.
    for i, (mode, a, b) in enumerate(sizes):
        for ts in range(5):
            ns = (ts + i) % 5
            head = bytes([i % 4, 1 + ts % 3, ts]) + size_bytes(mode, a, b) + bytes([ts, ns, i & 1, 0 if ts == 4 else 1])
            write("maxflow", f"seed-{mode}-{ts}", head + tail(64 + 16 * ts))
    # gmm: k, seed, size, image style, mask style, gamma, energy gamma, then the model bytes.
    for i, (mode, a, b) in enumerate(sizes):
        for style in range(7):
            head = bytes([(i + style) % 16]) + struct.pack("<Q", 1000 + i) + size_bytes(mode, a, b)
            head += bytes([style]) + tail(16) + bytes([style % 6]) + tail(8) + bytes([style % 4, style % 6])
            write("gmm", f"seed-{mode}-{style}", head + tail(96))
    # driver: flags, max_iter, components, gamma, seed, size, image, mask, model.
    for i, (mode, a, b) in enumerate(sizes):
        for style in range(7):
            flags = [0x00, 0x01, 0x02, 0x03, 0xF0, 0x00, 0x01][style]
            head = bytes([flags, 1 + style % 4, 4 if style < 4 else style]) + struct.pack("<H", 50) + bytes([style % 6])
            head += struct.pack("<Q", 7 * i + style) + (bytes([style]) if flags == 0xF0 else b"")
            head += size_bytes(mode, a, b) + bytes([(style + 3) % 7]) + tail(16) + bytes([style]) + tail(12)
            write("driver", f"seed-{mode}-{style}", head + tail(120))


if __name__ == "__main__":
    main()
