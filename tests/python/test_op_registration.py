"""The operators as PyTorch sees them: schema checks (opcheck), torch.compile, no autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut
from conftest import has_cuda, object_image, requires_cuda
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


# ---------------------------------------------------------------- the CUDA-only batch transfer ops


def transfer_inputs(device: str) -> tuple[torch.Tensor, list[torch.Tensor], list[int]]:
    """A (2, 3, 6, 7) batch, two host images of other sizes, their (h, w) sizes."""
    rng = np.random.default_rng(2)
    batch = torch.zeros(2, 3, 6, 7, dtype=torch.uint8, device=device)
    images = [torch.from_numpy(rng.integers(0, 256, (3, h, w), dtype=np.uint8)) for h, w in ((6, 5), (4, 7))]
    return batch, images, [6, 5, 4, 7]


@requires_cuda
def test_opcheck_upload_images() -> None:
    batch, images, _ = transfer_inputs("cuda")
    torch.library.opcheck(torch.ops.torchgrabcut.upload_images_.default, (batch, images))


@requires_cuda
def test_opcheck_download_masks() -> None:
    masks = torch.from_numpy(np.random.default_rng(3).integers(0, 4, (2, 6, 7), dtype=np.uint8)).cuda()
    torch.library.opcheck(torch.ops.torchgrabcut.download_masks.default, (masks, [6, 5, 4, 7]))


def test_fake_kernels_of_the_transfer_ops_give_the_kernels_shapes() -> None:
    """Under FakeTensorMode the ops run their fake kernels (their CUDA kernels cannot run here)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        batch, images, sizes = transfer_inputs("cpu")
        batch = mode.from_tensor(batch)
        assert torch.ops.torchgrabcut.upload_images_(batch, images) is None
        assert batch.shape == (2, 3, 6, 7)
        flat = torch.ops.torchgrabcut.download_masks(torch.empty(2, 6, 7, dtype=torch.uint8), sizes)
        # The CUDA kernel's result: masks cut to 6x5 and 4x7, end to end, on the host.
        assert flat.shape == (6 * 5 + 4 * 7,) and flat.dtype == torch.uint8 and flat.device.type == "cpu"
        with pytest.raises(RuntimeError):
            torch.ops.torchgrabcut.download_masks(torch.empty(2, 6, 7, dtype=torch.uint8), sizes[:2])
        with pytest.raises(RuntimeError):
            torch.ops.torchgrabcut.upload_images_(batch, images[:1])


# ---------------------------------------------------------------- limits: one definition, in the core


def test_limits_come_from_the_extension_and_every_layer_applies_them() -> None:
    from torchgrabcut import api

    max_iter, components, gamma = torch.ops.torchgrabcut.limits()
    assert (max_iter, components, gamma) == (1_000_000, 16, 1e4)  # the documented limits
    assert api.MAX_ITER_LIMIT == max_iter
    image, mask, model, sizes, _, k, _, seed, init, frozen = op_inputs("cpu")
    op = torch.ops.torchgrabcut.grabcut
    with pytest.raises(ValueError, match=f"max_iter: expected 0..{max_iter}, got {max_iter + 1}"):
        op(image, mask, model, sizes, max_iter + 1, k, 50.0, seed, init, frozen)
    big = torch.zeros(1, 2 * (components + 1), 13, dtype=torch.float64)
    with pytest.raises(ValueError, match=f"components: expected 1..{components}, got {components + 1}"):
        op(image, mask, big, sizes, 1, components + 1, 50.0, seed, init, frozen)
    with pytest.raises(ValueError, match=r"gamma: expected a finite value in \(0, 10000\]"):
        op(image, mask, model, sizes, 1, k, gamma * 1.01, seed, init, frozen)
    img = image[0].permute(1, 2, 0).numpy()
    with pytest.raises(ValueError, match=f"max_iter: expected 0..{max_iter}, got {max_iter + 1}"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), max_iter=max_iter + 1, device="cpu")
    with pytest.raises(ValueError, match=f"components: expected 1..{components}, got {components + 1}"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), components=components + 1, device="cpu")
    with pytest.raises(ValueError, match="gamma: expected 0 < gamma <= 10000, got"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), gamma=gamma * 1.01, device="cpu")
    torchgrabcut.grabcut(img, box=(4, 4, 28, 20), max_iter=1, components=components, gamma=gamma, device="cpu")
