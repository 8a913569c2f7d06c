"""Graph files for the torch-free benchmarks and models (tests/common/graph_file.h reads them).

A file is the magic line ``TGCG1``, then little-endian int32: height and width, the net
terminal capacities (height x width), and the four forward n-link planes in the solver's
direction order (right, down-right, down, down-left), each height x width.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_graph_file(path: Path, terminal: np.ndarray, nlinks: np.ndarray) -> None:
    """Writes ``terminal`` (H, W) and ``nlinks`` (4, H, W), both integers within int32, to ``path``."""
    terminal = np.asarray(terminal)
    nlinks = np.asarray(nlinks)
    if terminal.ndim != 2 or nlinks.shape != (4, *terminal.shape):
        raise ValueError(f"expected terminal (H, W) and nlinks (4, H, W), got {terminal.shape} and {nlinks.shape}")
    for name, a in (("terminal", terminal), ("nlinks", nlinks)):
        if not np.issubdtype(a.dtype, np.integer) or (
            a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max)
        ):
            raise ValueError(f"{name}: expected integers within int32, got {a.dtype}")
    with open(path, "wb") as f:
        f.write(b"TGCG1\n")
        f.write(np.array(terminal.shape, "<i4").tobytes())
        f.write(terminal.astype("<i4").tobytes())
        f.write(nlinks.astype("<i4").tobytes())
