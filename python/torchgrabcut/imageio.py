"""Reading and writing images and masks without OpenCV (Pillow), BGR like OpenCV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = ["overlay", "read_image", "write_image"]


def read_image(path: str | Path, grayscale: bool = False) -> np.ndarray:
    """An image file as uint8: (H, W, 3) in BGR order (as cv2.imread), or (H, W)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"image: no such file: {p}")
    try:
        with Image.open(p) as im:
            im.load()
            if grayscale:
                return np.asarray(im.convert("L"), dtype=np.uint8).copy()
            rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"image: cannot read {p} as an image ({err})") from err
    # Channel by channel: a third of the time of copying a reversed-stride view
    # (which the dataset job's loader workers pay per image).
    bgr = np.empty_like(rgb)
    bgr[..., 0] = rgb[..., 2]
    bgr[..., 1] = rgb[..., 1]
    bgr[..., 2] = rgb[..., 0]
    return bgr


def write_image(path: str | Path, image: np.ndarray) -> None:
    """Writes (H, W) grey or (H, W, 3) BGR uint8 as PNG (or any format Pillow knows by suffix)."""
    arr = image if image.ndim == 2 else image[:, :, ::-1]
    Image.fromarray(np.ascontiguousarray(arr)).save(path)


def overlay(image: np.ndarray, mask: np.ndarray, alpha: float = 0.55) -> np.ndarray:
    """The image with its background darkened and the foreground outlined in green (BGR)."""
    fg = (mask & 1).astype(bool)
    out = image.astype(np.float32)
    out[~fg] *= 1.0 - alpha
    edge = fg & ~(np.roll(fg, 1, 0) & np.roll(fg, -1, 0) & np.roll(fg, 1, 1) & np.roll(fg, -1, 1))
    out[edge] = (0, 255, 0)
    return out.clip(0, 255).astype(np.uint8)
