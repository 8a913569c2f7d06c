"""The operators as PyTorch sees them: schema checks (opcheck), torch.compile, no autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut  # noqa: F401
from conftest import has_cuda, object_image
from torchgrabcut import GC_PR_FGD

DEVICES = ["cpu"] + (["cuda"] if has_cuda() else [])


def op_inputs(device: str) -> tuple:
    img = object_image(np.random.default_rng(0), 24, 32, (4, 4, 28, 20))
    image = torch.from_numpy(img).permute(2, 0, 1)[None].contiguous().to(device)
    mask = torch.zeros(1, 24, 32, dtype=torch.uint8, device=device)
    mask[:, 4:20, 4:28] = GC_PR_FGD
    model = torch.zeros(1, 10, 13, dtype=torch.float64, device=device)
    return image, mask, model, [], 3, 5, 50.0, 0, True, False


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_grabcut(device: str) -> None:
    torch.library.opcheck(torch.ops.torchgrabcut.grabcut.default, op_inputs(device))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_maxflow(device: str) -> None:
    rng = np.random.default_rng(1)
    t = torch.from_numpy(rng.integers(-50, 50, (2, 9, 11)).astype(np.int32)).to(device)
    nl = torch.from_numpy(rng.integers(0, 30, (2, 4, 9, 11)).astype(np.int32)).to(device)
    torch.library.opcheck(torch.ops.torchgrabcut.maxflow_grid.default, (t, nl))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device: str) -> None:
    args = op_inputs(device)

    def segment(image: torch.Tensor, mask: torch.Tensor, model: torch.Tensor) -> torch.Tensor:
        out, _ = torch.ops.torchgrabcut.grabcut(image, mask, model, [], 3, 5, 50.0, 0, True, False)
        return (out & 1).sum()

    compiled = torch.compile(segment, fullgraph=True, backend="aot_eager")
    assert int(compiled(*args[:3])) == int(segment(*args[:3]))


def test_outputs_never_require_grad() -> None:
    image, mask, model, *rest = op_inputs("cpu")
    model = model.requires_grad_(True)
    out_mask, out_model = torch.ops.torchgrabcut.grabcut(image, mask, model, *rest)
    assert not out_model.requires_grad
    assert not out_mask.requires_grad
    assert out_mask.dtype == torch.uint8
