"""maxflow_grid's errors name the graph of the batch whose capacities are out of range.

Needs the extension built from csrc/bindings as of this test (op_checks.h, maxflow_grid_op.cpp).
"""

from __future__ import annotations

import pytest
import torch

import torchgrabcut  # noqa: F401  # registers torch.ops.torchgrabcut
from conftest import has_cuda

MAX_NLINK = 2**30 - 1


def _batch(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    terminal = torch.zeros((3, 4, 5), dtype=torch.int32, device=device)
    terminal[:, 1, 1] = 7
    terminal[:, 2, 3] = -7
    return terminal, torch.ones((3, 4, 4, 5), dtype=torch.int32, device=device)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not has_cuda(), reason="no CUDA"))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("graph", [0, 1, 2])
def test_a_negative_capacity_names_its_graph(device: str, graph: int) -> None:
    terminal, nlinks = _batch(device)
    nlinks[graph, 2, 1, 3] = -4
    with pytest.raises(ValueError, match=rf"nlinks: expected non-negative capacities, got -4 in graph {graph} of"):
        torch.ops.torchgrabcut.maxflow_grid(terminal, nlinks)


@pytest.mark.parametrize("graph", [0, 1, 2])
def test_a_capacity_over_the_limit_names_its_graph_and_pixel(graph: int) -> None:
    terminal, nlinks = _batch("cpu")
    nlinks[graph, 2, 1, 3] = MAX_NLINK + 1
    with pytest.raises(ValueError, match=rf"^graph {graph} of the batch: .*2\^30 - 1.*at pixel \(y=1, x=3\)"):
        torch.ops.torchgrabcut.maxflow_grid(terminal, nlinks)


def test_capacities_at_the_limit_are_solved() -> None:
    terminal, nlinks = _batch("cpu")
    nlinks[1] = MAX_NLINK
    cut, flows = torch.ops.torchgrabcut.maxflow_grid(terminal, nlinks)
    assert cut.shape == (3, 4, 5) and flows.tolist() == [7, 7, 7]
