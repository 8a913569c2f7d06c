"""A drop-in for ``cv2.grabCut``: same signature, constants and in-place semantics.

    import torchgrabcut as cv2gc
    mask, bgd, fgd = cv2gc.grabCut(img, mask, rect, bgd, fgd, 5, cv2gc.GC_INIT_WITH_RECT)

Differences from OpenCV: errors are Python exceptions (ValueError, TypeError)
instead of cv2.error, and a rect that covers the whole image segments with the
image border as background instead of raising. Computation runs on the GPU when
one is usable (``device=`` overrides).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from torchgrabcut.api import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD, grabcut
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

_CV2_COMPONENTS = 5


def _clip_rect(rect: Any, height: int, width: int) -> tuple[int, int, int, int]:
    """OpenCV's rect (x, y, w, h), clipped to the image as OpenCV does, as a box (x0, y0, x1, y1)."""
    try:
        x, y, w, h = (int(v) for v in rect)
    except (TypeError, ValueError) as err:
        raise ValueError(f"rect: expected 4 integers (x, y, width, height), got {rect!r}") from err
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, width), min(y + h, height)
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"rect: expected a non-empty rectangle inside the {height}x{width} image, got {rect!r}")
    return x0, y0, x1, y1


def _write_model(dst: Any, values: np.ndarray) -> np.ndarray:
    if isinstance(dst, np.ndarray) and dst.dtype == np.float64 and dst.size == values.size and dst.flags.writeable:
        dst.reshape(-1)[:] = values.reshape(-1)
        return dst
    return values


def grabCut(
    img: np.ndarray,
    mask: np.ndarray,
    rect: Any,
    bgdModel: Any,
    fgdModel: Any,
    iterCount: int,
    mode: int = GC_EVAL,
    *,
    device: str | torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cv2.grabCut``: writes mask, bgdModel and fgdModel in place and returns them."""
    if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise TypeError(
            "img: expected an 8-bit 3-channel image (numpy uint8, shape (H, W, 3)), got "
            + (f"{img.dtype} array of shape {img.shape}" if isinstance(img, np.ndarray) else type(img).__name__)
        )
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"mask: expected a numpy uint8 array to write into, got {type(mask).__name__}")
    if isinstance(iterCount, bool) or not isinstance(iterCount, (int, np.integer)):
        raise TypeError(f"iterCount: expected an int, got {type(iterCount).__name__}")
    if mode not in (GC_INIT_WITH_RECT, GC_INIT_WITH_MASK, GC_EVAL, GC_EVAL_FREEZE_MODEL):
        raise ValueError(
            f"mode: expected GC_INIT_WITH_RECT, GC_INIT_WITH_MASK, GC_EVAL or GC_EVAL_FREEZE_MODEL, got {mode}"
        )
    if not mask.flags.writeable:
        raise ValueError("mask: expected a writeable array (the result is written into it)")
    height, width = img.shape[:2]
    iters = max(int(iterCount), 0)

    if mode == GC_INIT_WITH_RECT:
        if mask.shape != (height, width) or mask.dtype != np.uint8:
            if mask.size != 0 and (mask.shape != (height, width) or mask.dtype != np.uint8):
                raise ValueError(
                    f"mask: expected a uint8 array of shape ({height}, {width}) (or empty), "
                    f"got {mask.dtype} {mask.shape}"
                )
            mask = np.zeros((height, width), dtype=np.uint8)
        box = _clip_rect(rect, height, width)
        out_mask, model = grabcut(img, box=box, max_iter=iters, return_model=True, device=device)
    else:
        if mask.shape != (height, width) or mask.dtype != np.uint8:
            raise ValueError(
                f"mask: expected a uint8 array of shape ({height}, {width}), got {mask.dtype} {mask.shape}"
            )
        if mode == GC_INIT_WITH_MASK:
            out_mask, model = grabcut(img, mask, max_iter=iters, return_model=True, device=device)
        else:
            given = GrabCutModel.from_cv2(np.asarray(bgdModel), np.asarray(fgdModel))
            if given.components != _CV2_COMPONENTS:
                raise ValueError(f"bgdModel/fgdModel: expected 1x65 arrays (5 components), got {given.components}")
            if iters == 0:
                return mask, bgdModel, fgdModel
            frozen = mode == GC_EVAL_FREEZE_MODEL
            out_mask, model = grabcut(
                img, mask, model=given, max_iter=iters, freeze_model=frozen, return_model=True, device=device
            )
    mask[...] = out_mask
    bgd, fgd = model.to_cv2()
    return mask, _write_model(bgdModel, bgd), _write_model(fgdModel, fgd)
