"""The operators as PyTorch sees them: schema checks (opcheck), torch.compile, no autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut
from conftest import has_cuda, object_image, requires_cuda
from torchgrabcut import GC_PR_FGD

DEVICES = ["cpu"] + (["cuda"] if has_cuda() else [])


def op_inputs(device: str, sizes: tuple[tuple[int, int], ...] = ((24, 32),)) -> tuple:
    """The operator's arguments for images of these sizes on ``device``, box masks, 3 iterations."""
    rng = np.random.default_rng(0)
    images, masks = [], []
    for h, w in sizes:
        box = (w // 8, h // 6, w - w // 8, h - h // 6)
        images.append(torch.from_numpy(object_image(rng, h, w, box)).permute(2, 0, 1).contiguous().to(device))
        mask = torch.zeros(h, w, dtype=torch.uint8, device=device)
        mask[box[1] : box[3], box[0] : box[2]] = GC_PR_FGD
        masks.append(mask)
    model = torch.zeros(len(sizes), 10, 13, dtype=torch.float64, device=device)
    return images, masks, model, 3, 5, 50.0, 0, True, False


MIXED = ((24, 32), (17, 40), (30, 21))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sizes", [((24, 32),), MIXED])
def test_opcheck_grabcut(device: str, sizes: tuple[tuple[int, int], ...]) -> None:
    torch.library.opcheck(torch.ops.torchgrabcut.grabcut.default, op_inputs(device, sizes))


@requires_cuda
def test_opcheck_grabcut_with_host_inputs_on_the_gpu() -> None:
    """On a GPU, images and masks may stay on the host (copied over in one transfer); each mask
    comes back on its image's side."""
    images, masks, model, *rest = op_inputs("cpu", MIXED)
    images[1] = images[1].cuda()
    masks[2] = masks[2].cuda()
    args = (images, masks, model.cuda(), *rest)
    torch.library.opcheck(torch.ops.torchgrabcut.grabcut.default, args)
    out, _ = torch.ops.torchgrabcut.grabcut(*args)
    assert [m.device.type for m in out] == ["cpu", "cuda", "cpu"]
    cpu_out, _ = torch.ops.torchgrabcut.grabcut(*op_inputs("cpu", MIXED))
    for got, want in zip(out, cpu_out):
        assert got.is_contiguous() and torch.equal(got.cpu(), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("inputs_on", ["device", "host"])
def test_masks_have_storage_of_their_own(device: str, inputs_on: str) -> None:
    """No returned mask shares storage with another or with an input (torch.library's aliasing
    rule: a caller may write one mask without changing another), for a ragged list and for the
    views of one (B, 3, H, W) batch, with inputs on the device or (GPU) on the host."""
    if inputs_on == "host" and device == "cpu":
        pytest.skip("the CPU has no host/device split")
    for sizes in (MIXED, ((12, 10),) * 3):
        images, masks, model, *rest = op_inputs(device if inputs_on == "device" else "cpu", sizes)
        if len(set(sizes)) == 1:  # views of one batch, as grabcut passes a (B, 3, H, W) tensor
            images = list(torch.stack(images).unbind(0))
            masks = list(torch.stack(masks).unbind(0))
        out, _ = torch.ops.torchgrabcut.grabcut(images, masks, model.to(device), *rest)
        storages = [m.untyped_storage().data_ptr() for m in out]
        inputs = {t.untyped_storage().data_ptr() for t in images + masks}
        assert len(set(storages)) == len(out) and not inputs & set(storages)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_maxflow(device: str) -> None:
    rng = np.random.default_rng(1)
    t = torch.from_numpy(rng.integers(-50, 50, (2, 9, 11)).astype(np.int32)).to(device)
    nl = torch.from_numpy(rng.integers(0, 30, (2, 4, 9, 11)).astype(np.int32)).to(device)
    torch.library.opcheck(torch.ops.torchgrabcut.maxflow_grid.default, (t, nl))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device: str) -> None:
    args = op_inputs(device, MIXED)

    def segment(image: list[torch.Tensor], mask: list[torch.Tensor], model: torch.Tensor) -> torch.Tensor:
        out, _ = torch.ops.torchgrabcut.grabcut(image, mask, model, 3, 5, 50.0, 0, True, False)
        return sum((m & 1).sum() for m in out)

    compiled = torch.compile(segment, fullgraph=True, backend="aot_eager")
    assert int(compiled(*args[:3])) == int(segment(*args[:3]))


def test_outputs_never_require_grad() -> None:
    image, mask, model, *rest = op_inputs("cpu")
    model = model.requires_grad_(True)
    out_masks, out_model = torch.ops.torchgrabcut.grabcut(image, mask, model, *rest)
    assert not out_model.requires_grad
    assert not out_masks[0].requires_grad
    assert out_masks[0].dtype == torch.uint8


# ---------------------------------------------------------------- the fake kernel


def test_the_fake_kernel_gives_each_mask_its_images_size_and_device() -> None:
    """Under FakeTensorMode the operator runs its fake kernel: a mask per image, (H, W) uint8 on the
    image's device (a GPU batch's host images get host masks), contiguous; checks the batch."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    images, masks, model, *rest = op_inputs("cpu", MIXED)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fake_images = [mode.from_tensor(im) for im in images]
        fake_masks = [mode.from_tensor(m) for m in masks]
        out, fake_model = torch.ops.torchgrabcut.grabcut(fake_images, fake_masks, mode.from_tensor(model), *rest)
        assert [tuple(m.shape) for m in out] == list(MIXED)
        assert all(m.dtype == torch.uint8 and m.is_contiguous() and m.device.type == "cpu" for m in out)
        assert fake_model.shape == model.shape
        with pytest.raises(RuntimeError):
            torch.ops.torchgrabcut.grabcut(fake_images, fake_masks[:2], mode.from_tensor(model), *rest)


def test_no_test_only_operator_is_registered() -> None:
    """The package registers the operators it uses; tests reach the core's internals through the C++ tests."""
    names = {s.name for s in torch._C._jit_get_all_schemas() if s.name.startswith("torchgrabcut::")}
    assert {"torchgrabcut::grabcut", "torchgrabcut::maxflow_grid", "torchgrabcut::limits"} <= names
    assert "torchgrabcut::_max_stage_threads" not in names  # its counter is compiled into the C++ tests only


# ---------------------------------------------------------------- limits: one definition, in the core


def test_limits_come_from_the_extension_and_every_layer_applies_them() -> None:
    from torchgrabcut import api

    max_iter, components, gamma = torch.ops.torchgrabcut.limits()
    assert (max_iter, components, gamma) == (1_000_000, 16, 1e4)  # the documented limits
    assert api.MAX_ITER_LIMIT == max_iter
    image, mask, model, _, k, _, seed, init, frozen = op_inputs("cpu")
    op = torch.ops.torchgrabcut.grabcut
    with pytest.raises(ValueError, match=f"max_iter: expected 0..{max_iter}, got {max_iter + 1}"):
        op(image, mask, model, max_iter + 1, k, 50.0, seed, init, frozen)
    big = torch.zeros(1, 2 * (components + 1), 13, dtype=torch.float64)
    with pytest.raises(ValueError, match=f"components: expected 1..{components}, got {components + 1}"):
        op(image, mask, big, 1, components + 1, 50.0, seed, init, frozen)
    with pytest.raises(ValueError, match=r"gamma: expected a finite value in \(0, 10000\]"):
        op(image, mask, model, 1, k, gamma * 1.01, seed, init, frozen)
    img = image[0].permute(1, 2, 0).numpy()
    with pytest.raises(ValueError, match=f"max_iter: expected 0..{max_iter}, got {max_iter + 1}"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), max_iter=max_iter + 1, device="cpu")
    with pytest.raises(ValueError, match=f"components: expected 1..{components}, got {components + 1}"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), components=components + 1, device="cpu")
    with pytest.raises(ValueError, match="gamma: expected 0 < gamma <= 10000, got"):
        torchgrabcut.grabcut(img, box=(4, 4, 28, 20), gamma=gamma * 1.01, device="cpu")
    torchgrabcut.grabcut(img, box=(4, 4, 28, 20), max_iter=1, components=components, gamma=gamma, device="cpu")


@requires_cuda
@pytest.mark.parametrize("extra", [0, 3])
def test_masks_as_corners_of_one_padded_gpu_batch(extra: int) -> None:
    """Masks that are the top-left corners of one padded CUDA batch (how grabcut passes box masks
    on a GPU) go in without a copy each when the padding is the largest size (extra = 0), through
    the per-mask copy otherwise (extra = 3); either way the CPU's masks, the batch untouched."""
    images, masks, model, *rest = op_inputs("cpu", MIXED)
    ph, pw = max(h for h, _ in MIXED) + extra, max(w for _, w in MIXED) + extra
    padded = torch.full((len(MIXED), ph, pw), 7, dtype=torch.uint8, device="cuda")
    for b, m in enumerate(masks):
        padded[b, : m.shape[0], : m.shape[1]] = m.cuda()
    before = padded.clone()
    corners = [padded[b, : m.shape[0], : m.shape[1]] for b, m in enumerate(masks)]
    out, _ = torch.ops.torchgrabcut.grabcut(images, corners, model.cuda(), *rest)
    want, _ = torch.ops.torchgrabcut.grabcut(images, masks, model, *rest)
    assert all(torch.equal(g.cpu(), w) for g, w in zip(out, want))
    assert torch.equal(padded, before)
