"""torchgrabcut.grabcut: the Python entry point, and the form of its results.

A call goes in four steps, in this order in the file: read and check the arguments
(``torchgrabcut._arguments``), before any image moves, and choose the device
(``torchgrabcut.device``); put the operator's inputs where it takes them (one
tensor per image and per mask, each on the device or, for a GPU, still on the host:
the operator lays the batch out as its backend needs); call the operator once; give
the results back in the form the images came in.

Threads: on the CPU one image's per-pixel stages run on ``torch.get_num_threads()``
OpenMP threads of the calling thread (set it with ``torch.set_num_threads``; the
max-flow is sequential); a batch or list runs its images in parallel, one thread
each, never threads within threads. Results are the same for every thread count. On
a busy or shared machine, or when several Python threads call at once,
``torch.set_num_threads(1)`` avoids OpenMP's spinning idle threads taking CPU from
the work (3x slower at 2 threads on a loaded 2-core machine).

The operator runs without the GIL: calls from several Python threads run at once.
Ctrl-C during a CPU batch raises KeyboardInterrupt once the images in progress are
done (a single image runs to its end; a CUDA batch too); inputs are never written,
so they are intact, and the next call works as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
import torch

from torchgrabcut import _ops
from torchgrabcut._arguments import (
    Form,
    Images,
    Layout,
    Settings,
    Start,
    check_box_mask_model,
    check_model,
    check_settings,
    read_boxes,
    read_images,
    read_masks,
)
from torchgrabcut._host_memory import host_memory
from torchgrabcut.device import choose_device, gpu_usable, resolve_device
from torchgrabcut.model import PARAMS_PER_COMPONENT, GrabCutModel

# choose_device, gpu_usable and resolve_device live in torchgrabcut.device (the CLI, the
# server and the dataset job decide by them too); they stay importable from here.
__all__ = [
    "GC_BGD",
    "GC_FGD",
    "GC_PR_BGD",
    "GC_PR_FGD",
    "MAX_ITER_LIMIT",
    "ImageLike",
    "choose_device",
    "gpu_usable",
    "grabcut",
    "resolve_device",
]

GC_BGD = 0
GC_FGD = 1
GC_PR_BGD = 2
GC_PR_FGD = 3

ImageLike = np.ndarray | torch.Tensor
MAX_ITER_LIMIT = _ops.MAX_ITER_LIMIT


@overload
def grabcut(
    image: np.ndarray,
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: Literal[False] = False,
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> np.ndarray: ...


@overload
def grabcut(
    image: np.ndarray,
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: Literal[True],
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> tuple[np.ndarray, GrabCutModel]: ...


@overload
def grabcut(
    image: torch.Tensor,
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: Literal[False] = False,
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> torch.Tensor: ...


@overload
def grabcut(
    image: torch.Tensor,
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: Literal[True],
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> tuple[torch.Tensor, GrabCutModel]: ...


@overload
def grabcut(
    image: Sequence[np.ndarray],
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: Literal[False] = False,
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> list[np.ndarray]: ...


@overload
def grabcut(
    image: Sequence[ImageLike],
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: bool = False,
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> Any: ...


def grabcut(
    image: ImageLike | Sequence[ImageLike],
    mask: Any = None,
    *,
    box: Any = None,
    max_iter: int = 5,
    model: GrabCutModel | None = None,
    freeze_model: bool = False,
    return_model: bool = False,
    seed: int = 0,
    device: str | torch.device | None = None,
    gamma: float = 50.0,
    components: int = 5,
) -> Any:
    """Segments an image (or a batch) with GrabCut and returns the mask.

    Args:
        image: an (H, W, 3) uint8 numpy array, a uint8 tensor (3, H, W) or
            (B, 3, H, W), or a list of such images of any sizes. Only uint8
            colours 0..255: a float image raises a TypeError giving the conversion
            for [0, 1] and for [0, 255] floats (neither is guessed). Never modified.
        mask: labels 0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD (any integer or bool dtype),
            (H, W), (B, H, W) or a list: learnt from (GC_INIT_WITH_MASK), or with
            ``model`` refined (GC_EVAL). Never modified.
        box: (x0, y0, x1, y1), half-open, or one per image ((B, 4)): inside starts
            as PR_FGD, outside as BGD (GC_INIT_WITH_RECT). Give ``box`` or ``mask``.
        max_iter: at most this many iterations (fewer only at an exact fixed point).
        model: a GrabCutModel to continue from; ``freeze_model`` keeps it as it
            is (GC_EVAL_FREEZE_MODEL); ``return_model`` also returns the final one.
        seed: seed of the k-means initialisation of the mixtures.
        device: 'cpu' or 'cuda', which overrides ``torchgrabcut.device.choose_device``:
            tensors compute where they are (all of a list on one device); numpy
            arrays follow them, and alone go to the GPU when one is usable.
        gamma: smoothness weight (OpenCV's 50), 0 < gamma <= 10000 (numpy scalars too).
        components: Gaussian components per class (OpenCV's 5).

    Returns:
        The mask in the image's form: (H, W) uint8 numpy for numpy wherever it ran,
        (H, W) or (B, H, W) tensors on the device used, a list for a list; with
        ``return_model``, ``(mask, model)`` (batched for a batch or a list).

    Raises:
        TypeError, ValueError: a wrong argument (the message names it).
        torch.OutOfMemoryError: not enough memory (the message says how much).

    Threads, the GIL and Ctrl-C: see ``torchgrabcut.api``'s module documentation.
    """
    images = read_images(image)
    settings = check_settings(max_iter, components, seed, gamma, freeze_model, return_model)
    check_box_mask_model(box, mask, model, settings.freeze_model)
    dev = choose_device(images.given, device)
    start = read_boxes(box, images.layout) if box is not None else read_masks(mask, images)
    params = check_model(model, images.layout.batch, settings.components, settings.freeze_model)

    with host_memory(images.layout.name()):
        inputs = _op_inputs(images, start, params, settings.components, dev)
        if start.masks is not None and params is None:  # a box always leaves pixels of both classes
            _check_classes(inputs.masks, "mask")
        out_masks, out_model = _run_op(inputs, settings)
        return _results(images, out_masks, out_model, settings.return_model, dev)


# Step 2: the operator's inputs. One tensor per image and per mask, each where the
# operator takes it: on the device it runs on, or, for a GPU, still on the host (the
# operator copies host inputs over in one transfer). The model's parameters are on
# that device: they say where the operator runs.


@dataclass(frozen=True)
class _OpInputs:
    images: list[torch.Tensor]  # (3, H, W) uint8 each
    masks: list[torch.Tensor]  # (H, W) uint8 each
    params: torch.Tensor  # (B, 2K, 13) float64 on the device; zeros when the model is learnt from the masks
    learn_model: bool


def _placed(tensor: torch.Tensor, dev: torch.device) -> torch.Tensor:
    """``tensor`` where the operator takes it: on ``dev``, or on the host when ``dev`` is a GPU."""
    if tensor.device == dev or (dev.type == "cuda" and tensor.device.type == "cpu"):
        return tensor
    return tensor.to(dev)


def _op_inputs(
    images: Images, start: Start, params: torch.Tensor | None, components: int, dev: torch.device
) -> _OpInputs:
    if images.whole is not None:  # a batch moves whole, in one copy
        chw = list(images.whole.to(dev).unbind(0))
    elif images.form is Form.TENSOR:  # a tensor's mask comes back on the device it ran on
        chw = [images.chw[0].to(dev)]
    else:
        chw = [_placed(im, dev) for im in images.chw]
    if start.boxes is not None:
        masks = _box_masks(start.boxes, images.layout, dev)
    else:
        assert start.masks is not None
        masks = [_placed(m.to(torch.uint8), dev) for m in start.masks]
    if params is None:
        zeros = torch.zeros((images.layout.batch, 2 * components, PARAMS_PER_COMPONENT), dtype=torch.float64)
        return _OpInputs(chw, masks, zeros.to(dev), learn_model=True)
    return _OpInputs(chw, masks, params.to(dev), learn_model=False)


def _box_masks(boxes: list[tuple[int, int, int, int]], layout: Layout, dev: torch.device) -> list[torch.Tensor]:
    """Initial masks of boxes: PR_FGD inside each box (half-open), BGD outside.

    A box that leaves no pixel outside it leaves nothing to learn the background
    from (``cv2.grabCut`` raises there); the one-pixel image border is then taken
    as background (BGD) instead, on images at least 3 pixels high and wide.
    On a GPU all masks are made there in a few tensor operations, as one batch padded
    to the largest height and width; mask b is the top-left corner of slot b, which
    the operator recognises and takes without a copy per mask (host-made masks would
    cross the bus: ~40 MB for a dataset batch of 512 crops). On the CPU each is made
    in numpy (a tensor's indexing costs ~10 us a call).
    """
    if dev.type != "cpu":
        padded = _padded_box_masks(boxes, layout.heights, layout.widths, dev)
        if layout.uniform:
            return list(padded.unbind(0))
        return [padded[b, :h, :w] for b, (h, w) in enumerate(zip(layout.heights, layout.widths))]
    masks = []
    for (x0, y0, x1, y1), h, w in zip(boxes, layout.heights, layout.widths):
        m = np.zeros((h, w), dtype=np.uint8)
        m[y0:y1, x0:x1] = GC_PR_FGD
        if (x0, y0, x1, y1) == (0, 0, w, h) and h >= 3 and w >= 3:
            m[0] = m[-1] = m[:, 0] = m[:, -1] = GC_BGD
        masks.append(torch.from_numpy(m))
    return masks


def _padded_box_masks(
    boxes: list[tuple[int, int, int, int]], heights: list[int], widths: list[int], dev: torch.device
) -> torch.Tensor:
    """The box masks as one (B, max H, max W) uint8 tensor on ``dev``; 0 beyond each image."""
    b = torch.tensor(boxes, dtype=torch.int64, device=dev).reshape(-1, 4)
    sizes = torch.tensor(list(zip(heights, widths)), dtype=torch.int64, device=dev).reshape(-1, 2)
    h, w = sizes[:, 0, None, None], sizes[:, 1, None, None]
    ys = torch.arange(max(heights), device=dev)[None, :, None]
    xs = torch.arange(max(widths), device=dev)[None, None, :]
    x0, y0, x1, y1 = (b[:, i, None, None] for i in range(4))
    inside = (ys >= y0) & (ys < y1) & (xs >= x0) & (xs < x1)
    whole = (x0 == 0) & (y0 == 0) & (x1 == w) & (y1 == h) & (h >= 3) & (w >= 3)
    border = (ys == 0) | (ys == h - 1) | (xs == 0) | (xs == w - 1)
    inside = inside & ~(whole & border)
    # uint8 all the way: a where() on Python scalars would make an int64 temporary (8 B/px).
    return inside.to(torch.uint8) * GC_PR_FGD  # GC_BGD == 0 elsewhere


def _check_classes(masks: list[torch.Tensor], name: str) -> None:
    """Both classes must have a pixel to learn from in every image (one host sync per device)."""
    batch = len(masks)
    has_fg, has_bg = _class_flags(masks)
    for b in range(batch):
        where = f" (image {b} of the batch)" if batch > 1 else ""
        if not has_fg[b]:
            raise ValueError(f"{name}: no foreground pixel (label GC_FGD or GC_PR_FGD) to learn from{where}")
        if not has_bg[b]:
            raise ValueError(f"{name}: no background pixel (label GC_BGD or GC_PR_BGD) to learn from{where}")


def _class_flags(masks: list[torch.Tensor]) -> tuple[list[bool], list[bool]]:
    """Per mask: whether it has a foreground pixel, and a background one."""
    has_fg, has_bg = [False] * len(masks), [False] * len(masks)
    by_device: dict[torch.device, list[int]] = {}
    for b, m in enumerate(masks):
        by_device.setdefault(m.device, []).append(b)
    for where in by_device.values():
        group = [masks[b] for b in where]
        if all(m.shape == group[0].shape for m in group):
            fg = (torch.stack(group) & 1).bool().flatten(1)
            flags = torch.stack((fg.any(1), (~fg).any(1)))
        else:
            fgs = [(m & 1).bool() for m in group]
            flags = torch.stack((torch.stack([f.any() for f in fgs]), torch.stack([(~f).any() for f in fgs])))
        fg_any, bg_any = flags.cpu().tolist()
        for b, f, g in zip(where, fg_any, bg_any):
            has_fg[b], has_bg[b] = bool(f), bool(g)
    return has_fg, has_bg


# Step 3: the call.


def _run_op(inputs: _OpInputs, settings: Settings) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(a mask per image, each (H, W) on its image's side; model parameters (B, 2K, 13)) from the operator."""
    return _ops.grabcut_op(
        inputs.images,
        inputs.masks,
        inputs.params,
        settings.max_iter,
        settings.components,
        settings.gamma,
        settings.seed,
        inputs.learn_model,
        settings.freeze_model,
    )


# Step 4: the results, in the form the images came in.


def _results(
    images: Images, masks: list[torch.Tensor], out_model: torch.Tensor, return_model: bool, dev: torch.device
) -> Any:
    shaped = _masks_in_form(masks, images.form, dev)
    if not return_model:
        return shaped
    model = GrabCutModel(out_model if images.form.batched else out_model[0])
    return shaped, (model.to("cpu") if images.form is Form.NUMPY else model)


def _masks_in_form(masks: list[torch.Tensor], form: Form, dev: torch.device) -> Any:
    """Numpy images get numpy masks (they stayed on the host); tensors get tensors on the device used."""
    if form is Form.NUMPY:
        return masks[0].numpy()
    if form is Form.NUMPY_LIST:
        return [m.numpy() for m in masks]
    if form is Form.TENSOR:
        return masks[0]
    if form is Form.BATCH:
        return torch.stack(masks)
    return [m.to(dev) for m in masks]
