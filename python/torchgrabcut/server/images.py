"""Image bytes in and out of the server: uploads decoded within a pixel limit, PNGs for the
page and the downloads, masks run-length encoded for the page's JSON."""

from __future__ import annotations

import io
import warnings

import numpy as np

from torchgrabcut.server.errors import UploadError

__all__ = ["decode_image", "encode_png", "rle_encode"]


def decode_image(data: bytes, max_pixels: int, name: str = "upload") -> np.ndarray:
    """Image bytes as (H, W, 3) uint8 BGR; UploadError when not an image or over ``max_pixels``.

    The size is checked from the header before decoding, so that a small file declaring a
    huge image is refused without allocating it.
    """
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise UploadError(f"{name}: the file is empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
                if w * h > max_pixels:
                    raise UploadError(
                        f"{name}: image too large: {w}x{h} = {w * h / 1e6:.1f} megapixels, "
                        f"the limit is {max_pixels / 1e6:.1f}",
                        413,
                    )
                im.load()
                rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except UploadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise UploadError(f"{name}: image too large ({err})", 413) from err
    except UnidentifiedImageError as err:
        raise UploadError(f"{name}: not an image (PNG, JPEG, BMP, ... expected)") from err
    except (OSError, SyntaxError, ValueError) as err:
        raise UploadError(f"{name}: cannot decode the image ({err})") from err
    if rgb.ndim != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise UploadError(f"{name}: the image is empty")
    if rgb.shape[0] * rgb.shape[1] > max_pixels:  # a format whose decoded size differs from its header's
        raise UploadError(f"{name}: image too large: {rgb.shape[1]}x{rgb.shape[0]}", 413)
    return np.ascontiguousarray(rgb[:, :, ::-1])


def encode_png(array: np.ndarray) -> bytes:
    """(H, W) grey or (H, W, 3) BGR uint8 as PNG bytes (fast compression: it is sent at once)."""
    from PIL import Image

    arr = array if array.ndim == 2 else array[:, :, ::-1]
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def rle_encode(mask: np.ndarray) -> dict[str, list[int]]:
    """Row-major runs of a label mask: ``values[i]`` repeated ``counts[i]`` times."""
    flat = np.ascontiguousarray(mask).reshape(-1)
    if flat.size == 0:
        return {"values": [], "counts": []}
    ends = np.flatnonzero(flat[1:] != flat[:-1]) + 1  # where a new run starts
    bounds = np.empty(ends.size + 2, np.int64)
    bounds[0], bounds[1:-1], bounds[-1] = 0, ends, flat.size
    return {"values": flat[bounds[:-1]].tolist(), "counts": np.diff(bounds).tolist()}
