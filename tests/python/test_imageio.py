"""Image files in and out: channel order and modes as cv2.imread reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from torchgrabcut.imageio import read_image, write_image


def _distinct_channels(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_png_round_trip_keeps_bgr_order(tmp_path: Path) -> None:
    bgr = _distinct_channels(37, 53)
    write_image(tmp_path / "a.png", bgr)
    # Pillow holds RGB: the file's first channel is our last.
    with Image.open(tmp_path / "a.png") as im:
        assert np.array_equal(np.asarray(im)[..., 0], bgr[..., 2])
    back = read_image(tmp_path / "a.png")
    assert back.dtype == np.uint8 and back.flags.c_contiguous
    assert np.array_equal(back, bgr)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "P"])
def test_reads_like_cv2_imread(tmp_path: Path, mode: str) -> None:
    cv2 = pytest.importorskip("cv2")
    rgb = _distinct_channels(29, 31, seed=1)
    im = Image.fromarray(rgb)
    if mode == "RGBA":
        im = im.convert("RGBA")
    elif mode == "L":
        im = im.convert("L")
    elif mode == "P":
        im = im.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    path = tmp_path / f"{mode}.png"
    im.save(path)
    ours = read_image(path)
    theirs = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert ours.shape == theirs.shape == (29, 31, 3)
    assert np.array_equal(ours, theirs)
    assert read_image(path, grayscale=True).shape == (29, 31)


def test_jpeg_channels_are_bgr(tmp_path: Path) -> None:
    # A pure red JPEG: decoders differ by a unit or two, but red must be the last channel.
    Image.new("RGB", (24, 16), (230, 10, 10)).save(tmp_path / "red.jpg", quality=95)
    img = read_image(tmp_path / "red.jpg")
    assert img.shape == (16, 24, 3)
    assert img[..., 2].min() > 200 and img[..., 0].max() < 40 and img[..., 1].max() < 40
