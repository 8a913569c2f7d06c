"""server/images.py: the mask's run-length encoding, the uploaded image's limits, and uploads decoded
as torchgrabcut.imageio.read_image reads the same file (EXIF orientation, 16-bit samples)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from server_helpers import png_bytes, rle_decode

from torchgrabcut import imageio
from torchgrabcut.imageio import read_image
from torchgrabcut.server.images import decode_image, rle_encode

# --- pure helpers -----------------------------------------------------------------------------


def test_rle_round_trip() -> None:
    rng = np.random.default_rng(0)
    for shape in [(1, 1), (3, 7), (30, 40)]:
        m = rng.integers(0, 4, shape).astype(np.uint8)
        m[:, : shape[1] // 2] = 2  # long runs too
        enc = rle_encode(m)
        assert sum(enc["counts"]) == m.size
        assert all(a != b for a, b in zip(enc["values"], enc["values"][1:]))  # runs are maximal
        np.testing.assert_array_equal(rle_decode(enc, *shape), m)


def test_decode_image_limits(image: np.ndarray) -> None:
    np.testing.assert_array_equal(decode_image(png_bytes(image), 10**6), image)  # BGR kept
    with pytest.raises(ValueError, match="not an image") as err:
        decode_image(b"GIF89a? no", 10**6)
    assert err.value.status == 400
    with pytest.raises(ValueError, match="too large: 64x48") as err:
        decode_image(png_bytes(image), 1000)
    assert err.value.status == 413


# --- uploads are the images the library reads from the same file -----------------------------


def _encoded(image_rgb: np.ndarray, fmt: str, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image_rgb).save(buf, format=fmt, **kwargs)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_exif_orientation_is_applied_like_read_image(fmt: str, tmp_path: Path) -> None:
    # Orientation 6: the stored picture is shown turned 90 degrees clockwise (a phone held upright).
    rgb = np.full((20, 30, 3), 40, np.uint8)
    rgb[:4, :6] = (250, 200, 10)  # a marker in the stored top-left corner
    exif = Image.Exif()
    exif[0x0112] = 6
    data = _encoded(rgb, fmt, exif=exif, **({"quality": 100, "subsampling": 0} if fmt == "JPEG" else {}))
    (tmp_path / "photo").write_bytes(data)
    ours = decode_image(data, 10**6, "photo")
    np.testing.assert_array_equal(ours, read_image(tmp_path / "photo"))
    assert ours.shape == (30, 20, 3) and ours.flags.c_contiguous
    upright_bgr = np.rot90(rgb, k=-1)[:, :, ::-1]  # clockwise: the stored top-left is now top-right
    if fmt == "PNG":
        np.testing.assert_array_equal(ours, upright_bgr)
    else:
        assert np.abs(ours.astype(int) - upright_bgr).max() <= 8


def test_16_bit_samples_are_scaled_like_read_image(tmp_path: Path) -> None:
    grey = np.random.default_rng(2).integers(0, 65536, (21, 34)).astype(np.uint16)
    data = _encoded(grey, "PNG")
    (tmp_path / "deep.png").write_bytes(data)
    ours = decode_image(data, 10**6, "deep.png")
    np.testing.assert_array_equal(ours, read_image(tmp_path / "deep.png"))
    np.testing.assert_array_equal(ours, np.repeat((grey >> 8).astype(np.uint8)[:, :, None], 3, axis=2))


def test_samples_the_library_refuses_are_a_400() -> None:
    with pytest.raises(ValueError, match="32-bit float samples; expected 8-bit") as err:
        decode_image(_encoded(np.ones((8, 9), np.float32), "TIFF"), 10**6, "depth.tif")
    assert err.value.status == 400 and "depth.tif" in str(err.value)
    with pytest.raises(ValueError, match="upload: the file is empty") as err:
        decode_image(b"", 10**6)
    assert err.value.status == 400


def test_the_pixel_limit_is_the_lower_of_the_servers_and_the_librarys(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _encoded(np.zeros((30, 40, 3), np.uint8), "PNG")  # 1200 pixels
    assert decode_image(data, 1200).shape == (30, 40, 3)
    for server_limit, library_limit in ((1199, imageio.MAX_IMAGE_PIXELS), (10**6, 1199)):
        monkeypatch.setattr(imageio, "MAX_IMAGE_PIXELS", library_limit)
        with pytest.raises(ValueError, match="image too large: 40x30 = ") as err:
            decode_image(data, server_limit)
        assert err.value.status == 413
