"""Image bytes in and out of the server: uploads decoded as the library reads files, within a
pixel limit; PNGs for the page and the downloads; masks run-length encoded for the page's JSON."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from PIL import Image

from torchgrabcut.imageio import ImageTooLarge, NotAnImage, UndecodableImage, image_size_bytes, read_image_bytes
from torchgrabcut.server.errors import UploadError

__all__ = ["decode_image", "encode_png", "image_size", "rle_encode"]


@contextmanager
def _upload_errors(name: str) -> Iterator[None]:
    """imageio's refusals as the server answers them: 413 over the pixel limit, 400 otherwise."""
    try:
        yield
    except ImageTooLarge as err:
        if err.pixels is None:
            raise UploadError(f"{name}: image too large ({err})", 413) from err
        size = f"{err.width}x{err.height} = " if err.width is not None else ""
        raise UploadError(
            f"{name}: image too large: {size}{err.pixels / 1e6:.1f} megapixels, the limit is {err.limit / 1e6:.1f}",
            413,
        ) from err
    except NotAnImage as err:  # not an image, or in a format refused (ICO): imageio says which
        raise UploadError(str(err).removeprefix("image: ")) from err
    except UndecodableImage as err:
        raise UploadError(f"{name}: cannot decode the image ({err.detail})") from err
    except ValueError as err:  # read but refused (32-bit samples), or too large for memory
        raise UploadError(str(err)) from err


def image_size(data: bytes, max_pixels: int, name: str = "upload") -> tuple[int, int]:
    """(width, height) from the image's header, nothing decoded; refused as :func:`decode_image`
    refuses it where the header tells (not an image, a refused format, over ``max_pixels``)."""
    if not data:
        raise UploadError(f"{name}: the file is empty")
    with _upload_errors(name):
        return image_size_bytes(data, name, max_pixels=max_pixels)


def decode_image(data: bytes, max_pixels: int, name: str = "upload") -> np.ndarray:
    """Image bytes as (H, W, 3) uint8 BGR; UploadError when not an image or over ``max_pixels``.

    Decoded by :func:`torchgrabcut.imageio.read_image_bytes`, so that an upload is the image
    ``torchgrabcut segment`` reads from the same file (EXIF orientation applied, 16-bit
    samples scaled, alpha dropped; PNG, JPEG, BMP, TIFF, GIF, WebP or PNM). The size is
    checked from the header before decoding, so that a small file declaring a huge image is
    refused without allocating it (413); the limit is ``max_pixels`` or the library's
    ``MAX_IMAGE_PIXELS``, whichever is lower.
    """
    if not data:
        raise UploadError(f"{name}: the file is empty")
    with _upload_errors(name):
        bgr = read_image_bytes(data, name, max_pixels=max_pixels)
    if bgr.shape[0] == 0 or bgr.shape[1] == 0:
        raise UploadError(f"{name}: the image is empty")
    return bgr


def encode_png(array: np.ndarray) -> bytes:
    """(H, W) grey or (H, W, 3) BGR uint8 as PNG bytes (fast compression: it is sent at once)."""
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
