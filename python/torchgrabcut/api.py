"""torchgrabcut.grabcut: the Python entry point.

It owns the conversions (numpy <-> torch, boxes to masks, padding a list of
images into one batch) and checks every argument, so that the operators below
only ever see well-formed tensors. A call goes in four steps, in this order in
the file after ``grabcut``: read and check the arguments, before any image is
moved; build the operator's padded batch on the device chosen (and check that a
mask gives both classes pixels, on the batch: one host sync for all images);
call the operator; give the results back in the form the images came in.
"""

from __future__ import annotations

import contextlib
import enum
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from torchgrabcut import _ops
from torchgrabcut.model import PARAMS_PER_COMPONENT, GrabCutModel

__all__ = [
    "GC_BGD",
    "GC_FGD",
    "GC_PR_BGD",
    "GC_PR_FGD",
    "choose_device",
    "gpu_usable",
    "grabcut",
    "masks_from_boxes",
    "resolve_device",
]

GC_BGD = 0
GC_FGD = 1
GC_PR_BGD = 2
GC_PR_FGD = 3

ImageLike = np.ndarray | torch.Tensor
MAX_ITER_LIMIT = _ops.MAX_ITER_LIMIT


def gpu_usable() -> bool:
    """True when a CUDA GPU is present and the extension was built with its CUDA kernels."""
    return bool(torch.cuda.is_available() and _ops.cuda_kernels_built())


def resolve_device(device: str | torch.device | None, default: torch.device | None = None) -> torch.device:
    """The device to compute on: ``device`` if given, else ``default``, else CUDA when usable."""
    if device is not None:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(f"device: expected 'cpu', 'cuda' or a torch.device, got {device!r}") from err
        if dev.type == "cuda" and not gpu_usable():
            raise ValueError(
                "device: 'cuda' was asked for, but "
                + (
                    "no CUDA GPU is available"
                    if not torch.cuda.is_available()
                    else "the extension was built without CUDA"
                )
            )
        if dev.type not in ("cpu", "cuda"):
            raise ValueError(f"device: expected 'cpu' or 'cuda', got {dev.type!r}")
        return dev
    if default is not None:
        return default
    if gpu_usable():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def choose_device(images: Sequence[object], device: str | torch.device | None = None) -> torch.device:
    """The device a call on these images (a call's image, or the entries of its list) computes on.

    ``device``, when given, decides. Otherwise tensors compute where they are: every
    tensor among the images must be on one device (a ValueError names two that
    differ), and numpy arrays beside them follow them there. Numpy arrays alone
    compute on the GPU when one is usable (``gpu_usable``: a CUDA GPU and the
    extension's CUDA kernels), else on the CPU.
    """
    if device is not None:
        return resolve_device(device)
    first: tuple[int, torch.device] | None = None
    for i, im in enumerate(images):
        if not isinstance(im, torch.Tensor):
            continue
        if first is None:
            first = (i, im.device)
        elif im.device != first[1]:
            where = (lambda j: f"image[{j}]") if len(images) > 1 else (lambda j: "image")
            raise ValueError(
                f"image: expected every tensor on one device, got {first[1]} ({where(first[0])}) and "
                f"{im.device} ({where(i)}); move them to one, or pass device= to choose"
            )
    return resolve_device(None, first[1] if first is not None else None)


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
        image: an (H, W, 3) uint8 numpy array (the mask comes back as an (H, W)
            uint8 numpy array); a uint8 tensor (3, H, W) or (B, 3, H, W) (the mask
            comes back as a tensor on the same device, (H, W) or (B, H, W)); or a
            list of such images of any sizes (a list of masks comes back).
            Only uint8 colours 0..255 are accepted: a float image raises a
            TypeError giving the conversion for [0, 1] and for [0, 255] floats
            (neither is guessed). Never modified.
        mask: initial labels (0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD) of any integer
            or bool dtype, (H, W) or (B, H, W) or a list; without ``model`` the mixtures are learnt from it
            (GC_INIT_WITH_MASK), with ``model`` it is the mask being refined
            (GC_EVAL). Never modified.
        box: (x0, y0, x1, y1), half-open (pixels x0 <= x < x1, y0 <= y < y1), or
            one box per image ((B, 4)). Inside starts as PR_FGD, outside as BGD
            (GC_INIT_WITH_RECT). Give either ``box`` or ``mask``.
        max_iter: at most this many iterations; it stops earlier only at an exact
            fixed point, so the result equals running all of them.
        model: a GrabCutModel to continue from instead of learning one.
        freeze_model: keep ``model`` as it is (GC_EVAL_FREEZE_MODEL).
        return_model: also return the final GrabCutModel.
        seed: seed of the k-means initialisation of the mixtures.
        device: 'cpu' or 'cuda' (or a torch.device), which overrides the rule:
            by default tensors compute where they are, and every tensor of a list
            must be on one device (else ValueError); numpy arrays follow the
            tensors of their list, and numpy arrays alone compute on the GPU when
            one is usable (a CUDA GPU and the extension's CUDA kernels), else on
            the CPU (``choose_device``). Numpy in, numpy out wherever it ran; a
            list with a tensor in it gives tensors on the device used.
        gamma: smoothness weight (OpenCV's 50), 0 < gamma <= 10000. Every
            numeric argument also takes numpy scalars (np.float32(50),
            np.int64(5)); bools are not numbers here.
        components: Gaussian components per class (OpenCV's 5).

    Returns:
        The mask, or ``(mask, model)`` with ``return_model``.

    Raises:
        TypeError, ValueError: a wrong argument (the message names it).
        torch.OutOfMemoryError: the batch needs more GPU memory than is free (the
            message says how much); nothing is left allocated, so a smaller batch
            can follow at once.

    Threads: on the CPU one image's per-pixel stages run on
    ``torch.get_num_threads()`` OpenMP threads of the calling thread (set it with
    ``torch.set_num_threads``; the max-flow is sequential); a batch or list runs its
    images in parallel, one thread each, never threads within threads. Results are
    the same for every thread count. On a busy or shared machine, or when several
    Python threads call at once, ``torch.set_num_threads(1)`` avoids OpenMP's
    spinning idle threads taking CPU from the work (3x slower at 2 threads on a
    loaded 2-core machine).

    The operator runs without the GIL: calls from several Python threads run at
    once. Ctrl-C during a CPU batch raises KeyboardInterrupt once the images in
    progress are done (a single image runs to its end; a CUDA batch too); inputs
    are never written, so they are intact, and the next call works as usual.
    """
    images = _read_images(image)
    settings = _check_settings(max_iter, components, seed, gamma, freeze_model, return_model)
    _check_box_mask_model(box, mask, model, settings.freeze_model)
    dev = choose_device(images.given, device)
    start = _read_boxes(box, images.layout) if box is not None else _read_masks(mask, images)
    params = _check_model(model, images.layout.batch, settings.components, settings.freeze_model)

    with _host_memory(_batch_name(images.layout)):
        batch = _make_batch(images, start, params, settings.components, dev)
        if start.masks is not None and params is None:  # a box always leaves pixels of both classes
            _check_classes(batch.masks, images.layout, "mask")

        out_mask, out_model = _run_op(batch, settings)
        return _results(images, out_mask, out_model, settings.return_model)


# Out of memory on the way in or out: every host allocation of a call (numpy and torch
# conversions, the padded batch, the operator's copies of its inputs) fails as the core's
# own scratch does, with torch.OutOfMemoryError naming the image, not with numpy's
# MemoryError or the allocator's "[enforce fail at alloc_cpu.cpp]" RuntimeError.

# What torch's CPU allocator raises (as a plain RuntimeError) when malloc fails.
_ALLOC_FAILURE = re.compile(r"DefaultCPUAllocator: can't allocate memory|enforce fail at alloc_cpu")
_REQUESTED = re.compile(r"allocate (\d+) bytes|Unable to allocate ([\d.]+ [KMGTP]?i?B)")


@contextlib.contextmanager
def _host_memory(what: str) -> Iterator[None]:
    """Allocation failures inside as torch.OutOfMemoryError naming ``what`` (an image, a batch)."""
    try:
        yield
    except torch.OutOfMemoryError:  # the core's and CUDA's, which already say what and how much
        raise
    except MemoryError as err:
        raise _out_of_memory(what, err) from err
    except RuntimeError as err:
        if _ALLOC_FAILURE.search(str(err)) is None:
            raise
        raise _out_of_memory(what, err) from err


def _out_of_memory(what: str, err: BaseException) -> torch.OutOfMemoryError:
    found = _REQUESTED.search(str(err))
    if found is None:
        size = ""
    elif found.group(1) is not None:
        size = f" ({int(found.group(1)) / 2**30:.2f} GiB more was asked for)"
    else:
        size = f" ({found.group(2)} more was asked for)"
    return torch.OutOfMemoryError(
        f"torchgrabcut.grabcut: out of host memory for {what}{size}; use smaller images or fewer at once"
    )


def _image_name(name: str, shape: Sequence[int]) -> str:
    """``image[2] (480x640, 307200 pixels)`` of a name and an (H, W, ...) shape."""
    h, w = int(shape[0]), int(shape[1])
    return f"{name} ({h}x{w}, {h * w} pixels)"


def _batch_name(layout: _Layout) -> str:
    if layout.batch == 1:
        return _image_name("image", (layout.heights[0], layout.widths[0]))
    ph, pw = layout.padded
    return f"a batch of {layout.batch} images (padded to {ph}x{pw}, {layout.batch * ph * pw} pixels)"


# Step 1: reading and checking the arguments. Nothing here moves or pads an image.


class _Form(enum.Enum):
    """The form the images came in, which is the form the results go back in."""

    NUMPY = enum.auto()  # one (H, W, 3) array: an (H, W) array, the model on the CPU
    TENSOR = enum.auto()  # one (3, H, W) tensor: an (H, W) tensor where it ran
    BATCH = enum.auto()  # a (B, 3, H, W) tensor: a (B, H, W) tensor, a batched model
    NUMPY_LIST = enum.auto()  # a list of arrays: a list of (H, W) arrays, a batched model
    LIST = enum.auto()  # a list with a tensor in it: a list of (H, W) tensors, a batched model

    @property
    def batched(self) -> bool:
        """True when several images may have come (a batch or a list): the model is batched."""
        return self in (_Form.BATCH, _Form.NUMPY_LIST, _Form.LIST)


@dataclass(frozen=True)
class _Layout:
    """The images' sizes; each lies in the top-left corner of a zero-padded batch."""

    heights: list[int]
    widths: list[int]

    @property
    def batch(self) -> int:
        return len(self.heights)

    @property
    def padded(self) -> tuple[int, int]:
        """(ph, pw): the padded batch's height and width."""
        return max(self.heights), max(self.widths)

    @property
    def ragged(self) -> bool:
        ph, pw = self.padded
        return any(h != ph or w != pw for h, w in zip(self.heights, self.widths))

    @property
    def sizes(self) -> list[int]:
        """[h0, w0, h1, w1, ...]: the operators' description of a batch of several sizes."""
        return [v for hw in zip(self.heights, self.widths) for v in hw]


@dataclass(frozen=True)
class _Images:
    """A call's images as uint8 (3, H, W) tensors, and how they came."""

    chw: list[torch.Tensor]
    form: _Form
    given: list[object]  # the caller's images (a list's entries, else the one argument): for choose_device
    whole: torch.Tensor | None  # the (B, 3, H, W) tensor of a batch, which needs no padding
    layout: _Layout

    @classmethod
    def of(
        cls, chw: list[torch.Tensor], form: _Form, given: list[object], whole: torch.Tensor | None = None
    ) -> _Images:
        layout = _Layout([int(im.shape[1]) for im in chw], [int(im.shape[2]) for im in chw])
        return cls(chw, form, given, whole, layout)


def _read_images(image: object) -> _Images:
    """Checks the ``image`` argument: one image, a (B, 3, H, W) batch, or a non-empty list of images."""
    if isinstance(image, torch.Tensor) and image.dim() == 4:
        _check_tensor_image(image, "image", batched=True)
        if image.shape[0] == 0:  # as an empty list: there is nothing to segment or to return a model of
            raise ValueError(f"image: expected at least one image, got an empty batch of shape {tuple(image.shape)}")
        return _Images.of(list(image.unbind(0)), _Form.BATCH, [image], whole=image)
    if isinstance(image, (list, tuple)):
        if len(image) == 0:
            raise ValueError("image: expected at least one image, got an empty list")
        read = [_image_to_chw(im, f"image[{i}]") for i, im in enumerate(image)]
        form = _Form.NUMPY_LIST if all(was_numpy for _, was_numpy in read) else _Form.LIST
        return _Images.of([chw for chw, _ in read], form, list(image))
    chw, was_numpy = _image_to_chw(image, "image")
    return _Images.of([chw], _Form.NUMPY if was_numpy else _Form.TENSOR, [image])


def _image_to_chw(image: object, name: str) -> tuple[torch.Tensor, bool]:
    """One image as a uint8 (3, H, W) tensor; True when it came as a numpy array."""
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8:
            raise _not_uint8(image, name)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(
                f"{name}: expected a numpy array of shape (H, W, 3), got {image.shape}{_shape_hint(image.shape, False)}"
            )
        if image.shape[0] == 0 or image.shape[1] == 0:
            raise ValueError(f"{name}: expected a non-empty image, got shape {image.shape}")
        with _host_memory(_image_name(name, image.shape)):
            return _from_numpy(image).permute(2, 0, 1), True
    if isinstance(image, torch.Tensor):
        _check_tensor_image(image, name, batched=False)
        return image, False
    raise TypeError(f"{name}: expected a numpy array or a torch.Tensor, got {type(image).__name__}")


def _check_tensor_image(image: torch.Tensor, name: str, batched: bool) -> None:
    _check_dense(image, name)
    if image.dtype != torch.uint8:
        raise _not_uint8(image, name)
    shape = "(B, 3, H, W)" if batched else "(3, H, W)"
    if image.dim() != (4 if batched else 3) or image.shape[-3] != 3:
        hint = _shape_hint(tuple(image.shape), True)
        raise ValueError(f"{name}: expected a tensor of shape {shape}, got {tuple(image.shape)}{hint}")
    if image.shape[-1] == 0 or image.shape[-2] == 0:
        raise ValueError(f"{name}: expected a non-empty image, got shape {tuple(image.shape)}")
    if image.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name}: expected a CPU or CUDA tensor, got device {image.device}")


def _check_dense(tensor: torch.Tensor, name: str) -> None:
    """Sparse, nested and other non-strided tensors are refused here: torch's operations on
    them fail deep inside, with messages about backends that name no argument."""
    if tensor.is_nested:
        raise TypeError(f"{name}: expected a dense tensor, got a nested tensor; pass a list of tensors instead")
    if tensor.layout != torch.strided:
        raise TypeError(f"{name}: expected a dense tensor, got layout {tensor.layout}; convert it with .to_dense()")


def _shape_hint(shape: tuple[int, ...], tensor: bool) -> str:
    """How to get from the usual wrong shapes to the expected one (channels last or first, grey, alpha)."""
    n = len(shape)
    if tensor:
        channels = shape[-3] if n in (3, 4) else None
        if channels != 3 and n in (3, 4) and shape[-1] == 3:
            return f" (channels last? pass image.permute({'0, 3, 1, 2' if n == 4 else '2, 0, 1'}))"
    else:
        channels = shape[2] if n == 3 else None
        if channels != 3 and n == 3 and shape[0] == 3:
            return " (channels first? pass image.transpose(1, 2, 0))"
    if n == 2 or channels == 1:
        return " (a grey image: repeat it into 3 channels)"
    if channels == 4:
        return " (drop the alpha channel)"
    return ""


def _not_uint8(image: np.ndarray | torch.Tensor, name: str) -> TypeError:
    """The error for an image that is not uint8; float images get the conversion for each convention.

    Floats are never guessed at: [0, 1] (torchvision) and [0, 255] (OpenCV after
    convertTo) are both common, and a dark [0, 255] image can look like a [0, 1] one.
    """
    is_numpy = isinstance(image, np.ndarray)
    expected = "uint8" if is_numpy else "torch.uint8"
    message = f"{name}: expected dtype {expected} (colours 0..255), got {image.dtype}"
    floating = np.issubdtype(image.dtype, np.floating) if is_numpy else image.dtype.is_floating_point
    if floating:
        to_uint8 = ".round().clip(0, 255).astype(np.uint8)" if is_numpy else ".round().clamp(0, 255).to(torch.uint8)"
        message += (
            f"; float images are not accepted: convert one in [0, 1] with (image * 255){to_uint8}, "
            f"one in [0, 255] with image{to_uint8}"
        )
        finite = bool(np.isfinite(image).all()) if is_numpy else bool(torch.isfinite(image).all())
        if not finite:
            message += " (this one also holds NaN or inf, which no conversion makes a colour)"
    return TypeError(message)


def _from_numpy(array: np.ndarray) -> torch.Tensor:
    """A tensor over the array's memory (a crop view of a larger image too), else over a copy.

    Copied: negative or zero strides (a flipped or broadcast array), which torch cannot
    view, and read-only arrays (np.asarray of a PIL image, a memory map), which torch
    would view only with a warning about writing to them; inputs are only ever read.
    """
    if array.flags.writeable and all(s > 0 for s in array.strides):
        return torch.from_numpy(array)
    return torch.from_numpy(array.copy(order="C"))


@dataclass(frozen=True)
class _Settings:
    """The numeric and boolean arguments, checked."""

    max_iter: int
    components: int
    seed: int
    gamma: float
    freeze_model: bool
    return_model: bool


def _check_settings(
    max_iter: object, components: object, seed: object, gamma: object, freeze_model: object, return_model: object
) -> _Settings:
    return _Settings(
        max_iter=_check_int(max_iter, "max_iter", 0, MAX_ITER_LIMIT),
        components=_check_int(components, "components", 1, _ops.MAX_COMPONENTS),
        seed=_check_int(seed, "seed", -(2**63), 2**63 - 1),
        gamma=_check_gamma(gamma),
        freeze_model=_check_bool(freeze_model, "freeze_model"),
        return_model=_check_bool(return_model, "return_model"),
    )


def _check_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    v = int(value)
    if not low <= v <= high:
        raise ValueError(f"{name}: expected {low}..{high}, got {v}")
    return v


def _check_real(value: object, name: str) -> float:
    """A finite real number (Python's or a numpy scalar's; bools are not numbers here)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return v


def _check_gamma(value: object) -> float:
    gamma = _check_real(value, "gamma")
    if not 0 < gamma <= _ops.MAX_GAMMA:
        raise ValueError(f"gamma: expected 0 < gamma <= {_ops.MAX_GAMMA:g}, got {gamma}")
    return gamma


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected bool, got {type(value).__name__}")
    return bool(value)


def _check_box_mask_model(box: object, mask: object, model: object, freeze_model: bool) -> None:
    """Exactly one of ``box`` and ``mask`` says where the object is; only a given model can be frozen."""
    if freeze_model and model is None:
        raise ValueError("freeze_model: needs a model to keep (model=None was given)")
    if box is None and mask is None:
        raise ValueError("box or mask: expected one of them to say where the object is, got neither")
    if box is not None and mask is not None:
        raise ValueError("box and mask: expected one of them, got both (a mask already holds the box)")


_Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class _Start:
    """Where the object is, checked: one box per image, or one mask of labels 0..3 per image."""

    boxes: list[_Box] | None = None
    masks: list[torch.Tensor] | None = None  # each (H, W) of its image, in the caller's dtype and device


def _read_boxes(box: object, layout: _Layout) -> _Start:
    """One box for every image, or a box per image ((B, 4)); each inside its image and leaving background."""
    batch = layout.batch
    boxes = _boxes_per_image(box, batch)
    parsed = [
        _parse_box(boxes[b], layout.heights[b], layout.widths[b], "box" if batch == 1 else f"box[{b}]")
        for b in range(batch)
    ]
    for b, ((x0, y0, x1, y1), h, w) in enumerate(zip(parsed, layout.heights, layout.widths)):
        if (x0, y0, x1, y1) == (0, 0, w, h) and min(h, w) < 3:
            name = "box" if batch == 1 else f"box[{b}]"
            raise ValueError(f"{name}: covers the whole {h}x{w} image, leaving no background to learn from")
    return _Start(boxes=parsed)


def _boxes_per_image(box: object, batch: int) -> list[object]:
    if isinstance(box, torch.Tensor):
        _check_dense(box, "box")
        box = box.detach().cpu().numpy()
    if isinstance(box, np.ndarray):
        if box.ndim == 1:
            return [box] * batch
        if box.ndim == 2 and box.shape[1] == 4 and box.shape[0] == batch:
            return list(box)
        raise ValueError(f"box: expected shape (4,) or ({batch}, 4), got {box.shape}")
    if isinstance(box, (list, tuple)) and len(box) > 0 and isinstance(box[0], (list, tuple, np.ndarray, torch.Tensor)):
        if len(box) != batch:
            raise ValueError(f"box: expected one box per image ({batch}), got {len(box)}")
        return list(box)
    return [box] * batch


def _parse_box(box: object, height: int, width: int, name: str) -> _Box:
    if isinstance(box, torch.Tensor):
        box = box.detach().cpu().tolist()
    elif isinstance(box, np.ndarray):
        box = box.tolist()
    if isinstance(box, (str, bytes)) or not isinstance(box, Sequence) or len(box) != 4:
        raise ValueError(f"{name}: expected 4 numbers (x0, y0, x1, y1), got {box!r}")
    values: list[int] = []
    for v in box:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name}: expected numbers (x0, y0, x1, y1), got {box!r}")
        f = float(v)
        if not math.isfinite(f) or f != math.floor(f):
            raise ValueError(f"{name}: expected whole, finite pixel coordinates (x0, y0, x1, y1), got {box!r}")
        values.append(int(f))
    x0, y0, x1, y1 = values
    if x1 <= x0 or y1 <= y0:
        raise ValueError(
            f"{name}: expected x0 < x1 and y0 < y1 (half-open, pixels x0 <= x < x1), got {tuple(values)}: "
            + ("empty" if x1 == x0 or y1 == y0 else "inverted")
        )
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
        raise ValueError(
            f"{name}: expected 0 <= x0 < x1 <= {width} and 0 <= y0 < y1 <= {height} for a {height}x{width} image, "
            f"got {tuple(values)}"
        )
    return x0, y0, x1, y1


def _read_masks(mask: object, images: _Images) -> _Start:
    """A mask per image: a list, a (B, H, W) array, or one (H, W) mask (for every image of a batch tensor)."""
    batch = images.layout.batch
    per_image = _masks_per_image(mask, batch, images.form)
    for b, m in enumerate(per_image):
        name = "mask" if batch == 1 else f"mask[{b}]"
        h, w = images.layout.heights[b], images.layout.widths[b]
        if tuple(m.shape) != (h, w):
            raise ValueError(f"{name}: expected the image's size ({h}, {w}), got {tuple(m.shape)}")
        _check_labels(m, name)
    return _Start(masks=per_image)


def _masks_per_image(mask: object, batch: int, form: _Form) -> list[torch.Tensor]:
    if isinstance(mask, (list, tuple)):
        if mask and not any(isinstance(m, (np.ndarray, torch.Tensor)) for m in mask):
            # mask.tolist(), or rows of numbers: not a list of masks, which it would be taken for.
            raise TypeError(
                f"mask: expected a numpy array or a torch.Tensor of labels (or a list of them, one per image), "
                f"got a {type(mask).__name__} of {len(mask)} {type(mask[0]).__name__}s; convert nested "
                "lists with np.asarray(mask, dtype=np.uint8)"
            )
        if len(mask) != batch:
            raise ValueError(f"mask: expected one mask per image ({batch}), got {len(mask)}")
        return [_to_mask_tensor(m, f"mask[{b}]") for b, m in enumerate(mask)]
    t = _to_mask_tensor(mask, "mask")
    if t.dim() == 3:
        if t.shape[0] != batch:
            raise ValueError(f"mask: expected {batch} masks, got shape {tuple(t.shape)}")
        return list(t.unbind(0))
    if t.dim() == 2:
        per_image = [t] * batch if form is _Form.BATCH else [t]
        if len(per_image) != batch:
            raise ValueError(f"mask: expected one mask per image ({batch}), got one")
        return per_image
    raise ValueError(f"mask: expected shape (H, W) or (B, H, W), got {tuple(t.shape)}")


def _to_mask_tensor(mask: object, name: str) -> torch.Tensor:
    if isinstance(mask, np.ndarray):
        if not (np.issubdtype(mask.dtype, np.integer) or mask.dtype == np.bool_):
            raise TypeError(f"{name}: expected an integer array of labels 0..3, got dtype {mask.dtype}")
        with _host_memory(_image_name(name, mask.shape) if mask.ndim == 2 else name):
            return _from_numpy(mask)
    if isinstance(mask, torch.Tensor):
        _check_dense(mask, name)
        if mask.dtype.is_floating_point or mask.dtype.is_complex:
            raise TypeError(f"{name}: expected an integer tensor of labels 0..3, got dtype {mask.dtype}")
        return mask
    raise TypeError(f"{name}: expected a numpy array or a torch.Tensor, got {type(mask).__name__}")


# torch has no min/max for its wider unsigned types: their bits are read as the signed
# type of the same width, where 0..3 stay 0..3 and values from 2**(bits-1) turn negative.
_SIGNED_VIEW = {torch.uint16: (torch.int16, 16), torch.uint32: (torch.int32, 32), torch.uint64: (torch.int64, 64)}


def _check_labels(mask: torch.Tensor, name: str) -> None:
    """Checks labels 0..3 (one host sync for device tensors)."""
    values, bits = mask, 0
    if mask.dtype in _SIGNED_VIEW:
        signed, bits = _SIGNED_VIEW[mask.dtype]
        values = mask.view(signed)
    if values.numel() > 0:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high > 3:
            bad = low if low < 0 else high
            if bits and bad < 0:
                bad += 1 << bits  # the unsigned value it was
            raise ValueError(f"{name}: expected labels 0..3 (GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD), got {bad}")


def _check_model(model: object, batch: int, components: int, frozen: bool) -> torch.Tensor | None:
    """The model's parameters, (B, 2K, 13) float64 (from a model per image, or one for every image);
    None without a model, which is then learnt from the masks."""
    if model is None:
        return None
    if not isinstance(model, GrabCutModel):
        raise TypeError(f"model: expected a torchgrabcut.GrabCutModel, got {type(model).__name__}")
    p = model.params
    if model.components != components:
        raise ValueError(f"model: expected {components} components per class, got {model.components}")
    if p.dim() == 2:
        p = p.unsqueeze(0).expand(batch, -1, -1)
    if p.shape[0] != batch:
        raise ValueError(f"model: expected a model per image ({batch}), got {p.shape[0]}")
    if not bool(torch.isfinite(p).all()):
        raise ValueError("model: expected finite parameters, got NaN or inf")
    if frozen:
        _check_usable_classes(p, batch, components)
    # Without freeze_model, a class without a usable component (a result with no
    # foreground learns an all-zero foreground mixture) is learnt again from the
    # mask's pixels of that class in the first iteration, as cv2.grabCut's GC_EVAL does.
    return p.contiguous()


def _check_usable_classes(params: torch.Tensor, batch: int, components: int) -> None:
    """A frozen model is used as it is: each class needs a component with a positive weight and a
    positive definite covariance."""
    cov = params[..., 4:].reshape(batch, 2, components, 3, 3)
    weight = params[..., 0].reshape(batch, 2, components)
    sym = (cov + cov.transpose(-1, -2)) / 2
    eig_min = torch.linalg.eigvalsh(sym.cpu()).amin(-1).to(params.device)
    usable = ((weight > 0) & (eig_min > 0)).any(-1)
    if not bool(usable.all()):
        raise ValueError(
            "model: with freeze_model, every class needs a component with a positive weight and a positive "
            "definite covariance (without freeze_model, a class the model lacks is learnt from the mask)"
        )


# Step 2: the operator's inputs, on the device it runs on: images and masks padded
# to one size, a model per image.


@dataclass(frozen=True)
class _Batch:
    images: torch.Tensor  # (B, 3, ph, pw) uint8
    masks: torch.Tensor  # (B, ph, pw) uint8
    params: torch.Tensor  # (B, 2K, 13) float64; zeros when the model is learnt from the masks
    learn_model: bool
    sizes: list[int]  # [h0, w0, h1, w1, ...] when the images' sizes differ, else []


def _make_batch(
    images: _Images, start: _Start, params: torch.Tensor | None, components: int, dev: torch.device
) -> _Batch:
    layout = images.layout
    batch_images = images.whole.to(dev) if images.whole is not None else _padded_batch(images.chw, layout, dev)
    if start.boxes is not None:
        masks = masks_from_boxes(start.boxes, layout.heights, layout.widths, *layout.padded, dev)
    else:
        assert start.masks is not None
        masks = _padded_masks(start.masks, layout, dev)
    if params is None:
        params = torch.zeros((layout.batch, 2 * components, PARAMS_PER_COMPONENT), dtype=torch.float64, device=dev)
        learn_model = True
    else:
        params, learn_model = params.to(dev), False
    return _Batch(batch_images, masks, params, learn_model, layout.sizes if layout.ragged else [])


def _padded_batch(images: list[torch.Tensor], layout: _Layout, dev: torch.device) -> torch.Tensor:
    """The images as one zero-padded uint8 (B, 3, ph, pw) batch on ``dev``.

    Host images bound for a GPU go in one operator call (upload_images_op): packed
    into one pinned buffer in C++, one transfer, one kernel to spread them out,
    rows of numpy's (H, W, 3) layout copied as they are. Copying them one by one
    would take a few tensor operations per image, each holding the GIL, which the
    other Python threads of a caller (the dataset job's) are waiting for.
    """
    batch = torch.zeros((layout.batch, 3, *layout.padded), dtype=torch.uint8, device=dev)
    if dev.type == "cuda" and all(im.device.type == "cpu" for im in images):
        _ops.upload_images_op(batch, images)
        return batch
    for b, im in enumerate(images):
        batch[b, :, : layout.heights[b], : layout.widths[b]] = im.to(dev)
    return batch


def _padded_masks(masks: list[torch.Tensor], layout: _Layout, dev: torch.device) -> torch.Tensor:
    """The masks as one zero-padded uint8 (B, ph, pw) batch on ``dev`` (converted before they move)."""
    batch = torch.zeros((layout.batch, *layout.padded), dtype=torch.uint8, device=dev)
    for b, m in enumerate(masks):
        batch[b, : layout.heights[b], : layout.widths[b]] = m.to(torch.uint8).to(dev)
    return batch


def _batch_grid(
    heights: list[int], widths: list[int], ph: int, pw: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Broadcastable (B, 1, 1) image heights and widths, and (1, ph, 1) rows and (1, 1, pw) columns."""
    h = torch.tensor(heights, dtype=torch.int64, device=device)[:, None, None]
    w = torch.tensor(widths, dtype=torch.int64, device=device)[:, None, None]
    ys = torch.arange(ph, device=device)[None, :, None]
    xs = torch.arange(pw, device=device)[None, None, :]
    return h, w, ys, xs


def masks_from_boxes(
    boxes: list[tuple[int, int, int, int]],
    heights: list[int],
    widths: list[int],
    ph: int,
    pw: int,
    device: torch.device,
) -> torch.Tensor:
    """Initial masks of boxes, (B, ph, pw): PR_FGD inside each box (half-open), BGD outside.

    A box that leaves no pixel outside it leaves nothing to learn the background
    from (``cv2.grabCut`` raises there); the one-pixel image border is then taken
    as background (BGD) instead, on images at least 3 pixels high and wide.
    """
    b = torch.tensor(boxes, dtype=torch.int64, device=device).reshape(-1, 4)
    h, w, ys, xs = _batch_grid(heights, widths, ph, pw, device)
    x0, y0, x1, y1 = (b[:, i, None, None] for i in range(4))
    inside = (ys >= y0) & (ys < y1) & (xs >= x0) & (xs < x1)
    whole = (x0 == 0) & (y0 == 0) & (x1 == w) & (y1 == h) & (h >= 3) & (w >= 3)
    border = (ys == 0) | (ys == h - 1) | (xs == 0) | (xs == w - 1)
    inside = inside & ~(whole & border)
    # uint8 all the way: a where() on Python scalars would make an int64 temporary (8 B/px).
    return inside.to(torch.uint8) * GC_PR_FGD  # GC_BGD == 0 elsewhere


def _check_classes(masks: torch.Tensor, layout: _Layout, name: str) -> None:
    """Both classes must have a pixel to learn from in every image.

    Checked on the padded batch, so that masks on a GPU cost one host sync for all images.
    """
    fg = (masks & 1).bool()
    h, w, ys, xs = _batch_grid(layout.heights, layout.widths, masks.shape[1], masks.shape[2], masks.device)
    valid = (ys < h) & (xs < w)
    has_fg = (fg & valid).flatten(1).any(1).cpu().tolist()
    has_bg = (~fg & valid).flatten(1).any(1).cpu().tolist()
    for b in range(layout.batch):
        where = f" (image {b} of the batch)" if layout.batch > 1 else ""
        if not has_fg[b]:
            raise ValueError(f"{name}: no foreground pixel (label GC_FGD or GC_PR_FGD) to learn from{where}")
        if not has_bg[b]:
            raise ValueError(f"{name}: no background pixel (label GC_BGD or GC_PR_BGD) to learn from{where}")


# Step 3: the call.


def _run_op(batch: _Batch, settings: _Settings) -> tuple[torch.Tensor, torch.Tensor]:
    """(masks (B, ph, pw), model parameters (B, 2K, 13)) from the operator."""
    return _ops.grabcut_op(
        batch.images,
        batch.masks,
        batch.params,
        batch.sizes,
        settings.max_iter,
        settings.components,
        settings.gamma,
        settings.seed,
        batch.learn_model,
        settings.freeze_model,
    )


# Step 4: the results, in the form the images came in.


def _results(images: _Images, out_mask: torch.Tensor, out_model: torch.Tensor, return_model: bool) -> Any:
    masks = _masks_in_form(out_mask, images)
    if not return_model:
        return masks
    model = GrabCutModel(out_model if images.form.batched else out_model[0])
    return masks, (model.to("cpu") if images.form is _Form.NUMPY else model)


def _masks_in_form(masks: torch.Tensor, images: _Images) -> Any:
    layout = images.layout
    if images.form is _Form.NUMPY:
        return masks[0].cpu().numpy()
    if images.form is _Form.TENSOR:
        return masks[0]
    if images.form is _Form.BATCH:
        return masks
    if images.form is _Form.NUMPY_LIST:
        return _masks_to_numpy(masks, layout)
    return [masks[b, : layout.heights[b], : layout.widths[b]] for b in range(layout.batch)]


def _masks_to_numpy(masks: torch.Tensor, layout: _Layout) -> list[np.ndarray]:
    """Each image's (H, W) mask from a padded (B, ph, pw) batch, as numpy arrays.

    From a GPU, the masks are gathered there and cross in one copy of their own
    pixels (the padded batch can be several times larger for crops of mixed sizes),
    in one operator call (download_masks_op); each mask is a view of one array.
    """
    if masks.device.type == "cpu":
        host = masks.numpy()
        return [np.ascontiguousarray(host[b, :h, :w]) for b, (h, w) in enumerate(zip(layout.heights, layout.widths))]
    flat = _ops.download_masks_op(masks.contiguous(), layout.sizes).numpy()
    out = []
    at = 0
    for h, w in zip(layout.heights, layout.widths):
        out.append(flat[at : at + h * w].reshape(h, w))
        at += h * w
    return out
