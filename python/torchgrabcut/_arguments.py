"""Reading and checking the arguments of ``torchgrabcut.grabcut``, before any image moves.

Each input form becomes one small typed value: the images (``Images``: uint8 (3, H, W)
tensors, the form they came in, their sizes), the numeric and boolean settings
(``Settings``), where the object is (``Start``: a box or a mask per image) and the
model's parameters. Every error names the argument, what was expected and what came.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from torchgrabcut import _ops
from torchgrabcut._host_memory import host_memory, image_name
from torchgrabcut.model import GrabCutModel

__all__ = [
    "Box",
    "Form",
    "Images",
    "Layout",
    "Settings",
    "Start",
    "check_box_mask_model",
    "check_model",
    "check_settings",
    "read_boxes",
    "read_images",
    "read_masks",
]


class Form(enum.Enum):
    """The form the images came in, which is the form the results go back in."""

    NUMPY = enum.auto()  # one (H, W, 3) array: an (H, W) array, the model on the CPU
    TENSOR = enum.auto()  # one (3, H, W) tensor: an (H, W) tensor where it ran
    BATCH = enum.auto()  # a (B, 3, H, W) tensor: a (B, H, W) tensor, a batched model
    NUMPY_LIST = enum.auto()  # a list of arrays: a list of (H, W) arrays, a batched model
    LIST = enum.auto()  # a list with a tensor in it: a list of (H, W) tensors, a batched model

    @property
    def batched(self) -> bool:
        """True when several images may have come (a batch or a list): the model is batched."""
        return self in (Form.BATCH, Form.NUMPY_LIST, Form.LIST)


@dataclass(frozen=True)
class Layout:
    """The images' sizes, in order."""

    heights: list[int]
    widths: list[int]

    @property
    def batch(self) -> int:
        return len(self.heights)

    @property
    def uniform(self) -> bool:
        """True when every image has the first one's size."""
        return all(h == self.heights[0] and w == self.widths[0] for h, w in zip(self.heights, self.widths))

    def name(self) -> str:
        """How an error names the call's images: ``image (HxW, N pixels)`` or ``a batch of B images (N pixels)``."""
        if self.batch == 1:
            return image_name("image", (self.heights[0], self.widths[0]))
        pixels = sum(h * w for h, w in zip(self.heights, self.widths))
        return f"a batch of {self.batch} images ({pixels} pixels)"


@dataclass(frozen=True)
class Images:
    """A call's images as uint8 (3, H, W) tensors, and how they came."""

    chw: list[torch.Tensor]
    form: Form
    given: list[object]  # the caller's images (a list's entries, else the one argument): for choose_device
    whole: torch.Tensor | None  # a (B, 3, H, W) batch as it came: moved whole, then unbound
    layout: Layout

    @classmethod
    def of(cls, chw: list[torch.Tensor], form: Form, given: list[object], whole: torch.Tensor | None = None) -> Images:
        layout = Layout([int(im.shape[1]) for im in chw], [int(im.shape[2]) for im in chw])
        return cls(chw, form, given, whole, layout)


def read_images(image: object) -> Images:
    """Checks the ``image`` argument: one image, a (B, 3, H, W) batch, or a non-empty list of images."""
    if isinstance(image, torch.Tensor) and image.dim() == 4:
        _check_tensor_image(image, "image", batched=True)
        if image.shape[0] == 0:  # as an empty list: there is nothing to segment or to return a model of
            raise ValueError(f"image: expected at least one image, got an empty batch of shape {tuple(image.shape)}")
        return Images.of(list(image.unbind(0)), Form.BATCH, [image], whole=image)
    if isinstance(image, (list, tuple)):
        if len(image) == 0:
            raise ValueError("image: expected at least one image, got an empty list")
        read = [_image_to_chw(im, f"image[{i}]") for i, im in enumerate(image)]
        form = Form.NUMPY_LIST if all(was_numpy for _, was_numpy in read) else Form.LIST
        return Images.of([chw for chw, _ in read], form, list(image))
    chw, was_numpy = _image_to_chw(image, "image")
    return Images.of([chw], Form.NUMPY if was_numpy else Form.TENSOR, [image])


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
        with host_memory(image_name(name, image.shape)):
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
    if isinstance(image, np.ndarray):
        expected, to_uint8 = "uint8", ".round().clip(0, 255).astype(np.uint8)"
        floating = bool(np.issubdtype(image.dtype, np.floating))
        finite = not floating or bool(np.isfinite(image).all())
    else:
        expected, to_uint8 = "torch.uint8", ".round().clamp(0, 255).to(torch.uint8)"
        floating = image.dtype.is_floating_point
        finite = not floating or bool(torch.isfinite(image).all())
    message = f"{name}: expected dtype {expected} (colours 0..255), got {image.dtype}"
    if floating:
        message += (
            f"; float images are not accepted: convert one in [0, 1] with (image * 255){to_uint8}, "
            f"one in [0, 255] with image{to_uint8}"
        )
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
class Settings:
    """The numeric and boolean arguments, checked."""

    max_iter: int
    components: int
    seed: int
    gamma: float
    freeze_model: bool
    return_model: bool


def check_settings(
    max_iter: object, components: object, seed: object, gamma: object, freeze_model: object, return_model: object
) -> Settings:
    return Settings(
        max_iter=_check_int(max_iter, "max_iter", 0, _ops.MAX_ITER_LIMIT),
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


def check_box_mask_model(box: object, mask: object, model: object, freeze_model: bool) -> None:
    """Exactly one of ``box`` and ``mask`` says where the object is; only a given model can be frozen."""
    if freeze_model and model is None:
        raise ValueError("freeze_model: needs a model to keep (model=None was given)")
    if box is None and mask is None:
        raise ValueError("box or mask: expected one of them to say where the object is, got neither")
    if box is not None and mask is not None:
        raise ValueError("box and mask: expected one of them, got both (a mask already holds the box)")


Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Start:
    """Where the object is, checked: one box per image, or one mask of labels 0..3 per image."""

    boxes: list[Box] | None = None
    masks: list[torch.Tensor] | None = None  # each (H, W) of its image, in the caller's dtype and device


def read_boxes(box: object, layout: Layout) -> Start:
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
    return Start(boxes=parsed)


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


def _parse_box(box: object, height: int, width: int, name: str) -> Box:
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


def read_masks(mask: object, images: Images) -> Start:
    """A mask per image: a list, a (B, H, W) array, or one (H, W) mask (for every image of a batch tensor)."""
    batch = images.layout.batch
    per_image = _masks_per_image(mask, batch, images.form)
    for b, m in enumerate(per_image):
        name = "mask" if batch == 1 else f"mask[{b}]"
        h, w = images.layout.heights[b], images.layout.widths[b]
        if tuple(m.shape) != (h, w):
            raise ValueError(f"{name}: expected the image's size ({h}, {w}), got {tuple(m.shape)}")
        _check_labels(m, name)
    return Start(masks=per_image)


def _masks_per_image(mask: object, batch: int, form: Form) -> list[torch.Tensor]:
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
        per_image = [t] * batch if form is Form.BATCH else [t]
        if len(per_image) != batch:
            raise ValueError(f"mask: expected one mask per image ({batch}), got one")
        return per_image
    raise ValueError(f"mask: expected shape (H, W) or (B, H, W), got {tuple(t.shape)}")


def _to_mask_tensor(mask: object, name: str) -> torch.Tensor:
    if isinstance(mask, np.ndarray):
        if not (np.issubdtype(mask.dtype, np.integer) or mask.dtype == np.bool_):
            raise TypeError(f"{name}: expected an integer array of labels 0..3, got dtype {mask.dtype}")
        with host_memory(image_name(name, mask.shape) if mask.ndim == 2 else name):
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


def check_model(model: object, batch: int, components: int, frozen: bool) -> torch.Tensor | None:
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
