"""Random integer grid graphs for the max-flow tests (shared by the CPU and GPU tests)."""

from __future__ import annotations

import numpy as np

KINDS = ["grabcut", "four", "tiny", "huge", "all_source", "all_sink", "zero"]

# (dy, dx) of the forward directions: right, down-right, down, down-left.
OFFSETS = [(0, 1), (1, 1), (1, 0), (1, -1)]


def zero_off_grid(nlinks: np.ndarray) -> np.ndarray:
    n = nlinks.copy()
    n[0, :, -1] = 0
    n[1, :, -1] = 0
    n[1, -1, :] = 0
    n[2, -1, :] = 0
    n[3, -1, :] = 0
    n[3, :, 0] = 0
    return n


def random_graph(rng: np.random.Generator, h: int, w: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    if kind == "grabcut":
        nl = rng.integers(0, 12800, (4, h, w))
        nl[1] = nl[1] * 7 // 10
        nl[3] = nl[3] * 7 // 10
        t = rng.integers(-115200 // 8, 115200 // 8, (h, w))
    elif kind == "four":
        nl = rng.integers(0, 100, (4, h, w))
        nl[1] = 0
        nl[3] = 0
        t = rng.integers(-300, 300, (h, w))
    elif kind == "tiny":
        nl = rng.integers(0, 3, (4, h, w))
        t = rng.integers(-2, 3, (h, w))
    elif kind == "huge":
        nl = rng.integers(0, 2**20, (4, h, w))
        t = rng.integers(-(2**28), 2**28, (h, w))
    elif kind == "all_source":
        nl = rng.integers(0, 50, (4, h, w))
        t = rng.integers(1, 100, (h, w))
    elif kind == "all_sink":
        nl = rng.integers(0, 50, (4, h, w))
        t = -rng.integers(1, 100, (h, w))
    elif kind == "zero":
        nl = np.zeros((4, h, w), np.int64)
        t = np.zeros((h, w), np.int64)
    else:
        raise AssertionError(kind)
    return t.astype(np.int32), zero_off_grid(nl.astype(np.int32))
