"""The CUDA backend against the CPU backend: same masks, models and flows.

Skipped where no GPU is; on a GPU a missing CUDA kernel fails (never skips).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut
from conftest import has_cuda, object_image
from graphs import KINDS, random_graph
from torchgrabcut import GC_BGD, GC_FGD, GC_PR_FGD, GrabCutModel, grabcut

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")]


def test_cuda_kernels_are_built() -> None:
    assert torchgrabcut.cuda_kernels_built(), "a GPU is present but the extension has no CUDA kernels"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", [(1, 1), (1, 300), (300, 1), (31, 33), (64, 64), (257, 129), (512, 512)])
def test_maxflow_gpu_equals_cpu(size: tuple[int, int], kind: str) -> None:
    rng = np.random.default_rng(hash((size, kind, "gpu")) % 2**32)
    graphs = [random_graph(rng, *size, kind) for _ in range(2)]
    t = torch.from_numpy(np.stack([g[0] for g in graphs]))
    nl = torch.from_numpy(np.stack([g[1] for g in graphs]))
    cut_cpu, flow_cpu = torch.ops.torchgrabcut.maxflow_grid(t, nl)
    cut_gpu, flow_gpu = torch.ops.torchgrabcut.maxflow_grid(t.cuda(), nl.cuda())
    assert torch.equal(flow_gpu.cpu(), flow_cpu)
    assert torch.equal(cut_gpu.cpu(), cut_cpu)


def test_grabcut50_gpu_equals_cpu(dataset_items: list) -> None:
    images = [it.image for it in dataset_items]
    boxes = [it.box for it in dataset_items]
    gpu_masks, gpu_model = grabcut(images, box=boxes, device="cuda", return_model=True)
    same = total = 0
    for b, (img, box) in enumerate(zip(images, boxes)):
        cpu_mask, cpu_model = grabcut(img, box=box, device="cpu", return_model=True)
        same += int((gpu_masks[b] == cpu_mask).sum())
        total += cpu_mask.size
        assert torch.equal(gpu_model[b].params.cpu(), cpu_model.params), f"model of {dataset_items[b].name}"
    fraction = same / total
    print(f"\nGPU/CPU identical pixels on GrabCut-50: {100 * fraction:.4f}%")
    assert fraction == 1.0


@pytest.mark.parametrize(("h", "w"), [(1, 2), (2, 1), (3, 3), (31, 33), (1, 400), (400, 1), (97, 203)])
def test_small_and_odd_sizes_gpu_equals_cpu(h: int, w: int) -> None:
    rng = np.random.default_rng(h * 1000 + w)
    img = object_image(rng, h, w, (0, 0, w, h))
    mask = rng.integers(0, 4, (h, w)).astype(np.uint8)
    mask.flat[0] = 0
    mask.flat[-1] = 1
    for seed in (0, 5):
        cpu = grabcut(img, mask, device="cpu", seed=seed)
        gpu = grabcut(img, mask, device="cuda", seed=seed)
        assert np.array_equal(cpu, gpu)


def test_modes_gpu_equal_cpu() -> None:
    rng = np.random.default_rng(7)
    box = (20, 15, 100, 80)
    img = object_image(rng, 96, 128, box)
    for device in ("cpu", "cuda"):
        mask, model = grabcut(img, box=box, max_iter=2, return_model=True, device=device)
        strokes = mask.copy()
        strokes[40:44, 50:60] = 0
        cont = grabcut(img, strokes, model=model, max_iter=2, device=device)
        frozen = grabcut(img, strokes, model=model, freeze_model=True, device=device)
        if device == "cpu":
            ref = (mask, model.params, cont, frozen)
        else:
            assert np.array_equal(mask, ref[0]) and torch.equal(model.params.cpu(), ref[1])
            assert np.array_equal(cont, ref[2]) and np.array_equal(frozen, ref[3])


def test_deterministic_on_gpu(dataset_items: list) -> None:
    img = torch.from_numpy(dataset_items[4].image).permute(2, 0, 1).cuda()
    runs = [grabcut(img, box=dataset_items[4].box) for _ in range(3)]
    assert all(torch.equal(runs[0], r) for r in runs[1:])


def test_second_stream_and_non_contiguous(dataset_items: list) -> None:
    item = dataset_items[5]
    ref = grabcut(item.image, box=item.box, device="cpu")
    hwc = torch.from_numpy(item.image).cuda()
    chw = hwc.permute(2, 0, 1)  # non-contiguous
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = grabcut(chw, box=item.box)
    stream.synchronize()
    assert out.device.type == "cuda"
    assert np.array_equal(out.cpu().numpy(), ref)


def test_list_of_host_images_on_gpu_equals_cpu() -> None:
    """Host images cross to the GPU packed in one buffer: every memory layout arrives intact."""
    rng = np.random.default_rng(11)
    big = object_image(rng, 90, 80, (10, 10, 70, 80))
    arrays = [object_image(rng, h, w, (1, 1, w - 1, h - 1)) for h, w in [(40, 52), (3, 97), (61, 3), (33, 33)]]
    images: list[np.ndarray | torch.Tensor] = [
        arrays[0],  # numpy (H, W, 3)
        torch.from_numpy(arrays[1]).permute(2, 0, 1),  # a (3, H, W) view of an (H, W, 3) array
        torch.from_numpy(arrays[2]).permute(2, 0, 1).contiguous(),  # contiguous (3, H, W)
        torch.from_numpy(arrays[3]).permute(2, 0, 1),
        torch.from_numpy(big).permute(2, 0, 1)[:, ::2, 5:60],  # strided both ways
        big[7:85, 3:71],  # numpy crop view: rows of the crop's width, the big image's stride
        big[:40, ::-1],  # negative strides (copied on the host)
    ]
    arrays += [np.ascontiguousarray(big[::2, 5:60]), np.ascontiguousarray(big[7:85, 3:71]), big[:40, ::-1].copy()]
    boxes = [(1, 1, a.shape[1] - 1, a.shape[0] - 1) for a in arrays]
    before = [a.copy() for a in arrays] + [big.copy()]
    refs = [grabcut(a, box=b, device="cpu") for a, b in zip(arrays, boxes)]
    mixed = grabcut(images, box=boxes, device="cuda")
    for i, (m, ref) in enumerate(zip(mixed, refs)):
        assert m.device.type == "cuda", f"image {i}"
        assert np.array_equal(m.cpu().numpy(), ref), f"image {i}"
    masks = grabcut(arrays, box=boxes, device="cuda")
    for i, (m, ref) in enumerate(zip(masks, refs)):
        assert isinstance(m, np.ndarray) and m.flags.c_contiguous and m.flags.writeable, f"mask {i}"
        assert np.array_equal(m, ref), f"mask {i}"
    masks[0][:] = 7  # masks share no pixels
    assert all(np.array_equal(m, ref) for m, ref in zip(masks[1:], refs[1:]))
    assert all(np.array_equal(a, b) for a, b in zip([*arrays, big], before)), "inputs are never written"


def _op_case(rng: np.random.Generator, count: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Host images of every layout the operator packs (crop views of (H, W, 3) arrays, contiguous
    (H, W, 3) and (3, H, W), every other column) with masks of both classes (crop views, contiguous)."""
    images, masks = [], []
    for _ in range(count):
        h, w = int(rng.integers(2, 70)), int(rng.integers(2, 70))
        big = rng.integers(0, 256, (h + 9, 2 * w + 9, 3), dtype=np.uint8)
        y, x = int(rng.integers(0, 10)), int(rng.integers(0, 10))
        layout = int(rng.integers(0, 4))
        crop = big[y : y + h, x : x + w]
        if layout == 0:
            images.append(torch.from_numpy(crop).permute(2, 0, 1))
        elif layout == 1:
            images.append(torch.from_numpy(crop.copy()).permute(2, 0, 1))
        elif layout == 2:
            images.append(torch.from_numpy(crop).permute(2, 0, 1).contiguous())
        else:
            images.append(torch.from_numpy(big[y : y + h, : 2 * w : 2]).permute(2, 0, 1))
        labels = rng.integers(0, 4, (h + 3, w + 3), dtype=np.uint8)
        labels[0, 0], labels[h - 1, w - 1] = GC_BGD, GC_FGD
        masks.append(torch.from_numpy(labels[:h, :w] if layout % 2 else labels[:h, :w].copy()))
    return images, masks


def test_host_inputs_of_every_layout_cross_in_one_call_and_match_the_cpu() -> None:
    """Host images and masks of every layout, some moved to the GPU first: masks and models equal
    the CPU's; each mask comes back on its image's side, contiguous; no input is written."""
    rng = np.random.default_rng(21)
    images, masks = _op_case(rng, 120)
    before = [t.clone() for t in images + masks]
    model = torch.zeros(len(images), 10, 13, dtype=torch.float64)
    op = torch.ops.torchgrabcut.grabcut
    want_masks, want_model = op(images, masks, model, 1, 5, 50.0, 0, True, False)
    on_gpu = [im.cuda() if b % 3 == 0 else im for b, im in enumerate(images)]
    gpu_masks = [m.cuda() if b % 5 == 0 else m for b, m in enumerate(masks)]
    got_masks, got_model = op(on_gpu, gpu_masks, model.cuda(), 1, 5, 50.0, 0, True, False)
    assert torch.equal(got_model.cpu(), want_model)
    for b, (got, want) in enumerate(zip(got_masks, want_masks)):
        assert got.device == on_gpu[b].device and got.is_contiguous(), b
        assert torch.equal(got.cpu(), want), b
    assert all(torch.equal(t, u) for t, u in zip(images + masks, before)), "inputs are never written"


def test_a_gpu_batch_goes_in_without_a_copy_and_equals_the_cpu() -> None:
    rng = np.random.default_rng(23)
    boxes = [(4, 4, 50, 40), (10, 2, 60, 44), (0, 0, 64, 48)]
    batch = torch.from_numpy(np.stack([object_image(rng, 48, 64, b) for b in boxes])).permute(0, 3, 1, 2)
    masks = torch.zeros(3, 48, 64, dtype=torch.uint8)
    for m, (x0, y0, x1, y1) in zip(masks, boxes):
        m[y0:y1, x0:x1] = GC_PR_FGD
    m[0] = m[-1] = m[:, 0] = m[:, -1] = GC_BGD
    model = torch.zeros(3, 10, 13, dtype=torch.float64)
    op = torch.ops.torchgrabcut.grabcut
    want, _ = op(list(batch.contiguous().unbind(0)), list(masks.unbind(0)), model, 3, 5, 50.0, 0, True, False)
    gpu_batch, gpu_masks = batch.contiguous().cuda(), masks.cuda()
    got, _ = op(list(gpu_batch.unbind(0)), list(gpu_masks.unbind(0)), model.cuda(), 3, 5, 50.0, 0, True, False)
    assert all(torch.equal(g.cpu(), w) for g, w in zip(got, want))
    assert torch.equal(gpu_masks.cpu(), masks), "the masks given are never written"


def test_the_cuda_kernel_rejects_bad_arguments() -> None:
    op = torch.ops.torchgrabcut.grabcut
    image = torch.zeros((3, 8, 8), dtype=torch.uint8, device="cuda")
    mask = torch.zeros((8, 8), dtype=torch.uint8, device="cuda")
    model = torch.zeros((2, 10, 13), dtype=torch.float64, device="cuda")
    with pytest.raises(ValueError, match=r"masks: expected one mask per image \(2\), got 1"):
        op([image, image], [mask], model, 1, 5, 50.0, 0, True, False)
    with pytest.raises(ValueError, match=r"masks\[1\]: expected its image's shape \(8, 8\), got \[9, 8\]"):
        op([image, image], [mask, torch.zeros((9, 8), dtype=torch.uint8)], model, 1, 5, 50.0, 0, True, False)
    with pytest.raises(ValueError, match="model: expected a CUDA tensor"):
        op([image, image], [mask, mask], model.cpu(), 1, 5, 50.0, 0, True, False)
    assert torch.equal(mask, torch.zeros_like(mask)), "a rejected call writes nothing"


def test_batch_tensor_on_gpu_equals_cpu() -> None:
    rng = np.random.default_rng(9)
    boxes = torch.tensor([[4, 4, 50, 40], [10, 2, 60, 44], [0, 0, 64, 48]])
    imgs = np.stack([object_image(rng, 48, 64, tuple(b.tolist())) for b in boxes])
    batch = torch.from_numpy(imgs).permute(0, 3, 1, 2)
    cpu = grabcut(batch, box=boxes)
    gpu = grabcut(batch.cuda(), box=boxes.cuda())
    assert torch.equal(cpu, gpu.cpu())
    mask = torch.zeros(3, 48, 64, dtype=torch.uint8)
    mask[:, 5:40, 5:50] = GC_PR_FGD
    assert torch.equal(grabcut(batch, mask), grabcut(batch.cuda(), mask.cuda()).cpu())


def test_eval_relearning_an_empty_class_gpu_equals_cpu() -> None:
    """Item 5 of issue 18: GC_EVAL from a model with an all-zero foreground mixture
    learns it from the strokes; the GPU gives the CPU's mask and model, alone and in a
    batch beside an image whose model is whole."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    img[22:38, 32:48] = np.clip(rng.normal((40, 40, 200), 5, (16, 16, 3)), 0, 255)
    img[0:10, :] = np.clip(rng.normal((40, 40, 200), 40, (10, 80, 3)), 0, 255)
    box = (20, 15, 60, 45)
    empty, model = grabcut(img, box=box, return_model=True, device="cpu")
    assert not (empty & 1).any() and not model.foreground[:, 0].any()
    strokes = empty.copy()
    strokes[26:34, 36:44] = torchgrabcut.GC_FGD
    cpu_mask, cpu_model = grabcut(img, strokes, model=model, max_iter=3, return_model=True, device="cpu")
    assert (cpu_mask & 1).sum() == 256
    gpu_mask, gpu_model = grabcut(img, strokes, model=model, max_iter=3, return_model=True, device="cuda")
    assert np.array_equal(gpu_mask, cpu_mask)
    assert torch.equal(gpu_model.params.cpu(), cpu_model.params)

    other = object_image(rng, 60, 80, box)
    other_mask, other_model = grabcut(other, box=box, return_model=True, device="cpu")
    both = GrabCutModel(torch.stack([model.params, other_model.params]))
    t = torch.stack([torch.from_numpy(i).permute(2, 0, 1) for i in (img, other)])
    masks = torch.stack([torch.from_numpy(strokes), torch.from_numpy(other_mask)])
    out, out_model = grabcut(t.cuda(), masks.cuda(), model=both.to("cuda"), max_iter=3, return_model=True)
    ref, ref_model = grabcut(t, masks, model=both, max_iter=3, return_model=True)
    assert torch.equal(out.cpu(), ref) and torch.equal(out_model.params.cpu(), ref_model.params)
    assert np.array_equal(ref[0].numpy(), cpu_mask)
    with pytest.raises(ValueError, match="with freeze_model"):
        grabcut(img, strokes, model=model, freeze_model=True, device="cuda")


def test_default_device_of_lists_on_a_gpu_machine() -> None:
    """Item 1 of issue 18: numpy lists compute on the GPU by default (they ran on the
    CPU); numpy beside a CUDA tensor follows it; CPU and CUDA tensors together raise."""
    rng = np.random.default_rng(12)
    arrays = [object_image(rng, h, w, (2, 2, w - 2, h - 2)) for h, w in [(40, 52), (33, 61)]]
    boxes = [(2, 2, a.shape[1] - 2, a.shape[0] - 2) for a in arrays]
    refs = [grabcut(a, box=b, device="cpu") for a, b in zip(arrays, boxes)]
    masks, model = grabcut(arrays, box=boxes, return_model=True)
    assert model.params.device.type == "cuda"  # where it ran
    assert all(isinstance(m, np.ndarray) and np.array_equal(m, r) for m, r in zip(masks, refs))
    on_gpu = torch.from_numpy(arrays[1]).permute(2, 0, 1).cuda()
    mixed = grabcut([arrays[0], on_gpu], box=boxes)
    assert all(m.device.type == "cuda" and np.array_equal(m.cpu().numpy(), r) for m, r in zip(mixed, refs))
    on_cpu = torch.from_numpy(arrays[0]).permute(2, 0, 1)
    with pytest.raises(ValueError, match=r"one device, got cpu \(image\[0\]\) and cuda:0 \(image\[1\]\)"):
        grabcut([on_cpu, on_gpu], box=boxes)
    assert [m.device.type for m in grabcut([on_cpu, on_gpu], box=boxes, device="cpu")] == ["cpu", "cpu"]
