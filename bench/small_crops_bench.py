"""CPU time of one call on 64 small crops (60..200 px a side): the dataset job's workload on the CPU.

    OMP_NUM_THREADS=2 python bench/small_crops_bench.py [label]

Prints the median of 5 timed calls after a warm-up and a checksum of the masks (equal
checksums: the same masks), so two builds can be compared side by side.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from torchgrabcut import grabcut


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "this build"
    rng = np.random.default_rng(0)
    images, boxes = [], []
    for _ in range(64):
        h, w = (int(v) for v in rng.integers(60, 200, 2))
        img = rng.integers(0, 60, (h, w, 3), dtype=np.uint8)
        img[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4] += 150
        images.append(img)
        boxes.append((w // 5, h // 5, w - w // 5, h - h // 5))
    grabcut(images[:4], box=boxes[:4], device="cpu")
    times = []
    for _ in range(5):
        t = time.perf_counter()
        masks = grabcut(images, box=boxes, device="cpu")
        times.append(time.perf_counter() - t)
    checksum = sum(int(m.sum()) for m in masks)
    print(f"{label}: median {sorted(times)[2]:.3f} s for 64 crops, checksum {checksum}")


if __name__ == "__main__":
    main()
