"""A drop-in for ``cv2.grabCut``: same signature, constants and in-place semantics.

    import torchgrabcut as cv2gc
    mask, bgd, fgd = cv2gc.grabCut(img, mask, rect, bgd, fgd, 5, cv2gc.GC_INIT_WITH_RECT)

It takes what ``cv2.grabCut`` takes and raises where it raises (checked against
OpenCV 5.1's Python binding): the rect is clipped as OpenCV clips it; the mask and
both models are written into the caller's arrays where cv2 writes into them, and
come back as new arrays where cv2 allocates new ones (``None``, empty, or another
shape or dtype where cv2 would reallocate); layouts cv2 refuses to write into raise.

Errors are ``ValueError`` or ``TypeError``; when cv2 can be imported they are also
``cv2.error`` (classes deriving from both), so code written for cv2 catches them.

Where cv2 raises or gives a meaningless mask, this drop-in decides:
- a rect that covers the whole image segments with the image border as background;
- GC_EVAL_FREEZE_MODEL with a class whose weights are all zero raises;
- a model with NaN or infinite values raises in GC_EVAL and GC_EVAL_FREEZE_MODEL.
Computation runs where ``torchgrabcut.grabcut`` runs a numpy image by default (the
GPU when one is usable); ``device=`` overrides.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import torch

from torchgrabcut.api import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD, MAX_ITER_LIMIT, grabcut
from torchgrabcut.model import GrabCutModel

__all__ = [
    "GC_BGD",
    "GC_EVAL",
    "GC_EVAL_FREEZE_MODEL",
    "GC_FGD",
    "GC_INIT_WITH_MASK",
    "GC_INIT_WITH_RECT",
    "GC_PR_BGD",
    "GC_PR_FGD",
    "grabCut",
]

GC_INIT_WITH_RECT = 0
GC_INIT_WITH_MASK = 1
GC_EVAL = 2
GC_EVAL_FREEZE_MODEL = 3

_MODEL_SIZE = 65  # OpenCV's 5 components x (weight, mean 3, covariance 9)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_CV_STS_BAD_ARG = -5
_CV_CN_MAX = 128  # OpenCV 5's channel limit: a 3-D array with at most this many in its last axis is multichannel
_CV_MAX_DIM = 32
# dtypes cv2 maps to a Mat without a copy; int64 needs a cast (a copy), which cv2 refuses for an output.
_CV2_DTYPES = frozenset(
    np.dtype(t).str
    for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.uint64)
    + (np.float16, np.float32, np.float64)
)


# ---------------------------------------------------------------------------
# Errors: ValueError/TypeError, and cv2.error as well when cv2 can be imported.
# ---------------------------------------------------------------------------


@functools.cache
def _error_types() -> tuple[type[ValueError], type[TypeError]]:
    """The classes raised: built lazily, so that importing torchgrabcut never imports cv2.

    Code that catches ``cv2.error`` has imported cv2 already, so the import here costs
    nothing then. cv2.error is a plain Python exception class (an Exception with a
    ``__dict__``), so a class deriving from it and from ValueError (or TypeError) has a
    valid layout.
    """
    try:
        import cv2  # optional: needed only once an error is raised

        base = cv2.error
    except Exception:  # cv2 absent, or present but unable to load its libraries
        return ValueError, TypeError
    if not (isinstance(base, type) and issubclass(base, Exception)):
        return ValueError, TypeError

    def reduce(self: BaseException) -> tuple[Any, tuple[str, str]]:
        # Rebuilt by name on unpickling (a worker process's error reaches its parent).
        return _make_error, ("type" if isinstance(self, TypeError) else "value", str(self))

    value_error = type("GrabCutValueError", (base, ValueError), {"__module__": __name__, "__reduce__": reduce})
    type_error = type("GrabCutTypeError", (base, TypeError), {"__module__": __name__, "__reduce__": reduce})
    return value_error, type_error  # type: ignore[return-value]


def _make_error(kind: str, message: str) -> Exception:
    value_error, type_error = _error_types()
    err = (type_error if kind == "type" else value_error)(message)
    if value_error is not ValueError:
        # The attributes cv2 sets on its own errors, for handlers that read them.
        err.code = _CV_STS_BAD_ARG  # type: ignore[attr-defined]
        err.err = message  # type: ignore[attr-defined]
        err.func = "grabCut"  # type: ignore[attr-defined]
        err.file = __file__  # type: ignore[attr-defined]
        err.line = 0  # type: ignore[attr-defined]
        err.msg = message  # type: ignore[attr-defined]
    return err


def _fail(message: str) -> NoReturn:
    raise _make_error("value", message)


def _fail_type(message: str) -> NoReturn:
    raise _make_error("type", message)


# ---------------------------------------------------------------------------
# Arguments as cv2's Python binding reads them.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mat:
    """What OpenCV's binding makes of an output argument: its Mat's emptiness, depth, rows, cols, channels."""

    empty: bool
    dtype: np.dtype | None
    rows: int
    cols: int
    channels: int

    def is_(self, dtype: type, rows: int, cols: int) -> bool:
        """Whether cv2 uses this array as it is for a one-channel Mat of this type and size."""
        size_matches = self.rows == rows and self.cols == cols
        return not self.empty and self.dtype == np.dtype(dtype) and self.channels == 1 and size_matches


def _output_mat(value: object, name: str) -> _Mat:
    """Reads an output argument (mask, bgdModel, fgdModel) as cv2 does, raising where cv2 does."""
    if value is None:
        return _Mat(True, None, 0, 0, 1)
    if isinstance(value, (int, float)):
        # cv2 takes a Python number (bool and numpy's float64 included, other numpy scalars not)
        # as a 4x1 float64 array, which a call then replaces, rejects or returns untouched.
        _scalar_as_array(value, name)
        return _Mat(False, np.dtype(np.float64), 4, 1, 1)
    if not isinstance(value, np.ndarray):
        _fail_type(f"{name}: expected a numpy array (or None), got {type(value).__name__}")
    if not value.flags.writeable:
        _fail(f"{name}: expected a writeable array (cv2.grabCut writes into it), got a read-only one")
    if value.dtype.str not in _CV2_DTYPES and value.dtype != np.int64:
        _fail_type(f"{name}: expected an array of a type OpenCV handles, got dtype {value.dtype}")
    if value.ndim >= _CV_MAX_DIM:
        _fail(f"{name}: expected fewer than {_CV_MAX_DIM} dimensions, got {value.ndim}")
    multichannel = value.ndim == 3 and value.shape[2] <= _CV_CN_MAX
    if multichannel and value.shape[2] == 0:
        _fail(f"{name}: expected 1 to {_CV_CN_MAX} channels in its last axis, got shape {value.shape}")
    item = value.itemsize
    shape, strides = value.shape, value.strides
    # cv2 writes into the caller's memory only where it maps to a Mat as it is: the last
    # axis dense, strides not increasing, channels packed; anything else needs a copy,
    # which it refuses for an output (int64 always needs one: a cast to int32).
    bad_layout = value.dtype == np.int64
    for i in range(value.ndim - 1, -1, -1):
        last = i == value.ndim - 1
        if shape[i] > 1 and ((last and strides[i] != item) or (not last and strides[i] < strides[i + 1])):
            bad_layout = True
    if multichannel and strides[1] != item * shape[2]:
        bad_layout = True
    if bad_layout:
        _fail(
            f"{name}: cv2.grabCut cannot write into this layout (dtype {value.dtype}, shape {shape}, "
            f"strides {strides}); pass a C-contiguous array"
        )
    dims = max(value.ndim - (1 if multichannel else 0), 1)
    sizes = shape[:dims] if value.ndim else (1,)
    if dims == 1:
        rows, cols = 1, int(sizes[0])
    elif dims == 2:
        rows, cols = int(sizes[0]), int(sizes[1])
    else:
        rows, cols = -1, -1
    return _Mat(value.size == 0, value.dtype, rows, cols, int(shape[2]) if multichannel else 1)


def _scalar_as_array(value: float, name: str) -> np.ndarray:
    # cv2 reads an int as a C long (past it, it fails with a SystemError).
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        _fail(f"{name}: expected an array, got a number out of range: {value!r}")
    return np.array([[float(value)], [0.0], [0.0], [0.0]])


def _returned_untouched(value: object, name: str) -> object:
    """What cv2 returns for an output it neither read nor wrote: the same array, a new one when empty."""
    if isinstance(value, np.ndarray):
        return value.copy() if value.size == 0 else value
    if isinstance(value, (int, float)):
        return _scalar_as_array(value, name)
    return value


def _c_int(value: object, name: str, default: int) -> int:
    """An int argument as cv2 reads it: None is the default; bool, float and anything past int32 raise."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        _fail_type(f"{name}: expected an integer, got {type(value).__name__} {value!r}")
    number = operator.index(value)
    if not _INT32_MIN <= number <= _INT32_MAX:
        _fail(f"{name}: expected a 32-bit integer, got {number}")
    return number


def _parse_rect(rect: object) -> tuple[int, int, int, int]:
    """cv2's rect argument (x, y, width, height), read in every mode; None is (0, 0, 0, 0)."""
    if rect is None:
        return 0, 0, 0, 0
    if not isinstance(rect, (Sequence, np.ndarray)) or (isinstance(rect, np.ndarray) and rect.ndim == 0):
        _fail_type(f"rect: expected a sequence of 4 integers (x, y, width, height), got {type(rect).__name__}")
    if len(rect) != 4:
        _fail(f"rect: expected 4 integers (x, y, width, height), got {len(rect)} values: {rect!r}")
    values = []
    for v in rect:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            _fail_type(f"rect: expected 4 integers (x, y, width, height), got {rect!r}")
        number = operator.index(v)
        if not _INT32_MIN <= number <= _INT32_MAX:
            _fail(f"rect: expected 32-bit integers, got {rect!r}")
        values.append(number)
    return values[0], values[1], values[2], values[3]


def _rect_box(rect: tuple[int, int, int, int], height: int, width: int) -> tuple[int, int, int, int]:
    """OpenCV's rect clipping, as a half-open box (x0, y0, x1, y1).

    OpenCV clamps x and y to 0 and keeps width and height, then cuts them at the
    image's right and bottom edges: (-10, -10, 40, 30) is [0, 40) x [0, 30). A width
    or height that ends up negative (a rect past the image, or a negative size) or
    zero (nothing to learn the foreground from) raises, as in cv2.
    """
    x, y, w, h = rect
    x0, y0 = max(x, 0), max(y, 0)
    w, h = min(w, width - x0), min(h, height - y0)
    if w <= 0 or h <= 0:
        _fail(
            f"rect: expected a non-empty rectangle (x, y, width, height) on the {height}x{width} image, got "
            f"{rect}: clipped as OpenCV clips it, its {'width' if w <= 0 else 'height'} is {w if w <= 0 else h}"
        )
    return x0, y0, x0 + w, y0 + h


def _check_model_values(values: np.ndarray, name: str) -> None:
    """cv2 checks each weighted component's covariance determinant when it reads a model, in every mode."""
    weights, cov = values[:5], values[20:].reshape(5, 3, 3)
    with np.errstate(all="ignore"):
        for k in range(5):
            if weights[k] > 0:
                c = cov[k]
                det = (
                    c[0, 0] * (c[1, 1] * c[2, 2] - c[1, 2] * c[2, 1])
                    - c[0, 1] * (c[1, 0] * c[2, 2] - c[1, 2] * c[2, 0])
                    + c[0, 2] * (c[1, 0] * c[2, 1] - c[1, 1] * c[2, 0])
                )
                # OpenCV 5.1 asserts det > DBL_EPSILON (a NaN fails too).
                if not det > np.finfo(np.float64).eps:
                    _fail(f"{name}: component {k} has weight {weights[k]} and a singular covariance (det {det})")


def _read_model(value: object, name: str) -> tuple[np.ndarray, bool]:
    """A model's 65 values (zeros for an empty one) and whether the caller's array receives the result."""
    mat = _output_mat(value, name)
    if mat.empty:
        return np.zeros(_MODEL_SIZE), False
    if not mat.is_(np.float64, 1, _MODEL_SIZE):
        _fail(
            f"{name}: expected a float64 array of 1 x 65 (a row of OpenCV's 5 components), or None, got "
            + (f"{value.dtype} {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__)
        )
    assert isinstance(value, np.ndarray)
    values = np.array(value, dtype=np.float64).reshape(-1)
    _check_model_values(values, name)
    return values, True


def _check_mask(mask: object, mat: _Mat, height: int, width: int) -> np.ndarray:
    """cv2's checkMask (the labels themselves are checked by torchgrabcut.grabcut): the mask as (H, W)."""
    if mat.empty:
        _fail("mask: expected the labels to start from, got an empty mask")
    if mat.dtype != np.uint8 or mat.channels != 1:
        _fail_type(
            "mask: expected a uint8 array of labels, got "
            + (f"{mask.dtype} {mask.shape}" if isinstance(mask, np.ndarray) else type(mask).__name__)
        )
    if (mat.rows, mat.cols) != (height, width):
        _fail(f"mask: expected the image's {height}x{width}, got shape {np.shape(mask)}")
    return np.asarray(mask).reshape(height, width)


def _check_image(img: object) -> np.ndarray:
    if not isinstance(img, np.ndarray):
        _fail_type(f"img: expected an 8-bit 3-channel image (numpy uint8, shape (H, W, 3)), got {type(img).__name__}")
    if img.size == 0:
        _fail(f"img: expected a non-empty image, got shape {img.shape}")
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        _fail_type(
            f"img: expected an 8-bit 3-channel image (numpy uint8, shape (H, W, 3)), got {img.dtype} {img.shape}"
        )
    return img


def grabCut(
    img: np.ndarray,
    mask: np.ndarray | None,
    rect: Any,
    bgdModel: np.ndarray | None,
    fgdModel: np.ndarray | None,
    iterCount: int,
    mode: int = GC_EVAL,
    *,
    device: str | torch.device | None = None,
) -> tuple[Any, np.ndarray, np.ndarray]:
    """``cv2.grabCut``: writes mask, bgdModel and fgdModel in place (or allocates them as cv2 does); returns them."""
    mask_mat = _output_mat(mask, "mask")
    rect_values = _parse_rect(rect)
    iters = _c_int(iterCount, "iterCount", 0)
    mode = _check_mode(_c_int(mode, "mode", GC_EVAL))
    image = _check_image(img)
    bgd_values, bgd_in_place = _read_model(bgdModel, "bgdModel")
    fgd_values, fgd_in_place = _read_model(fgdModel, "fgdModel")
    height, width = image.shape[:2]
    # Past the limit, the library stops at a fixed point that cv2 reaches as well.
    iters = min(max(iters, 0), MAX_ITER_LIMIT)
    frozen = mode == GC_EVAL_FREEZE_MODEL

    mask_out: Any = mask
    if mode == GC_INIT_WITH_RECT:
        box = _rect_box(rect_values, height, width)
        if not mask_mat.is_(np.uint8, height, width):
            mask_out = np.zeros((height, width), np.uint8)  # cv2 allocates a new mask; the caller's is left alone
        call: dict[str, Any] = {"box": box}
    elif mode == GC_INIT_WITH_MASK:
        call = {"mask": _check_mask(mask, mask_mat, height, width)}
    elif iters == 0:
        # cv2 reads (or allocates) the models and returns: the mask is neither read nor written.
        mask_out = _returned_untouched(mask, "mask")
        call = {}
    else:
        try:
            model = GrabCutModel.from_cv2(bgd_values.reshape(1, -1), fgd_values.reshape(1, -1))
        except (ValueError, TypeError) as err:  # NaN or infinite values: cv2 would compute garbage from them
            _fail(str(err))
        # cv2 runs one iteration with a frozen model (the graph would be the same each time).
        iters = 1 if frozen else iters
        call = {"mask": _check_mask(mask, mask_mat, height, width), "model": model, "freeze_model": frozen}

    if call:
        mask_arg = call.pop("mask", None)
        try:
            labels, learnt = grabcut(image, mask_arg, max_iter=iters, return_model=True, device=device, **call)
        except (ValueError, TypeError) as err:
            raise _make_error("type" if isinstance(err, TypeError) else "value", str(err)) from err
        assert isinstance(mask_out, np.ndarray)
        mask_out[...] = np.asarray(labels).reshape(mask_out.shape)
        if not frozen:
            bgd_new, fgd_new = learnt.to_cv2()
            bgd_values, fgd_values = bgd_new.reshape(-1), fgd_new.reshape(-1)

    bgd_out = _store_model(bgdModel, bgd_values, bgd_in_place)
    fgd_out = _store_model(fgdModel, fgd_values, fgd_in_place)
    return mask_out, bgd_out, fgd_out


def _check_mode(mode: int) -> int:
    if mode not in (GC_INIT_WITH_RECT, GC_INIT_WITH_MASK, GC_EVAL, GC_EVAL_FREEZE_MODEL):
        _fail(f"mode: expected GC_INIT_WITH_RECT, GC_INIT_WITH_MASK, GC_EVAL or GC_EVAL_FREEZE_MODEL, got {mode}")
    return mode


def _store_model(given: object, values: np.ndarray, in_place: bool) -> np.ndarray:
    if in_place:
        assert isinstance(given, np.ndarray)
        given[...] = values.reshape(given.shape)
        return given
    return values.reshape(1, _MODEL_SIZE).copy()
