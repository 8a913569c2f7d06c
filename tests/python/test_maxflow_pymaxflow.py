"""The grid max-flow against an independent solver (PyMaxflow, Boykov-Kolmogorov).

Same integer graph on both sides: the flow values must be equal and the cuts
identical. BK's sink tree at termination is exactly the set of pixels that can
reach the sink in the residual graph, so PyMaxflow's segmentation (free pixels
default to the source) is the canonical cut too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut  # noqa: F401  (registers torch.ops.torchgrabcut)
from graphs import KINDS, OFFSETS, random_graph

maxflow = pytest.importorskip("maxflow")


def pymaxflow_solve(terminal: np.ndarray, nlinks: np.ndarray) -> tuple[int, np.ndarray]:
    h, w = terminal.shape
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes((h, w))
    for d, (dy, dx) in enumerate(OFFSETS):
        structure = np.zeros((3, 3), dtype=int)
        structure[1 + dy, 1 + dx] = 1
        g.add_grid_edges(ids, weights=nlinks[d].astype(np.int64), structure=structure, symmetric=True)
    g.add_grid_tedges(ids, np.maximum(terminal, 0).astype(np.int64), np.maximum(-terminal, 0).astype(np.int64))
    flow = g.maxflow()
    source_side = ~g.get_grid_segments(ids)
    return int(flow), source_side.astype(np.uint8)


SIZES = [(1, 1), (1, 17), (17, 1), (2, 2), (31, 33), (64, 48), (128, 128)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", SIZES)
def test_cpu_maxflow_matches_pymaxflow(size: tuple[int, int], kind: str) -> None:
    rng = np.random.default_rng(hash((size, kind)) % 2**32)
    t, nl = random_graph(rng, *size, kind)
    cut, flows = torch.ops.torchgrabcut.maxflow_grid(torch.from_numpy(t)[None], torch.from_numpy(nl)[None])
    ref_flow, ref_cut = pymaxflow_solve(t, nl)
    assert int(flows[0]) == ref_flow
    assert np.array_equal(cut[0].numpy(), ref_cut)


def test_cpu_maxflow_batch_and_large() -> None:
    rng = np.random.default_rng(11)
    ts, nls = zip(*(random_graph(rng, 300, 400, "grabcut") for _ in range(2)))
    cut, flows = torch.ops.torchgrabcut.maxflow_grid(torch.from_numpy(np.stack(ts)), torch.from_numpy(np.stack(nls)))
    for b in range(2):
        ref_flow, ref_cut = pymaxflow_solve(ts[b], nls[b])
        assert int(flows[b]) == ref_flow
        assert np.array_equal(cut[b].numpy(), ref_cut)


def test_off_grid_links_are_ignored() -> None:
    rng = np.random.default_rng(3)
    t, nl = random_graph(rng, 9, 7, "grabcut")
    noisy = nl.copy()
    noisy[0, :, -1] = 999
    noisy[3, :, 0] = 999
    a = torch.ops.torchgrabcut.maxflow_grid(torch.from_numpy(t)[None], torch.from_numpy(noisy)[None])
    b = torch.ops.torchgrabcut.maxflow_grid(torch.from_numpy(t)[None], torch.from_numpy(nl)[None])
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
