"""Label images (trimaps, ground truth): lossy formats are refused wherever one is read.

A lossy format does not give back the labels saved: a JPEG trimap of labels 0..3 reads
back with other values around every edge, and GrabCut then starts from another trimap.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, features

from conftest import write_tiny_dataset
from torchgrabcut.cli import main
from torchgrabcut.imageio import read_label_image, write_image


def _trimap() -> np.ndarray:
    trimap = np.zeros((40, 50), np.uint8)
    trimap[5:35, 10:40] = 2
    trimap[10:30, 15:35] = 3
    return trimap


def _save(array: np.ndarray, **kwargs: Any) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, **kwargs)
    return buf.getvalue()


def _animated_webp(array: np.ndarray, lossless: bool) -> bytes:
    buf = io.BytesIO()
    frames = [Image.fromarray(array).convert("RGB"), Image.fromarray(255 - array).convert("RGB")]
    frames[0].save(buf, format="WEBP", save_all=True, append_images=frames[1:], lossless=lossless)
    return buf.getvalue()


# name -> (the file's bytes, what the message calls the format); each is a format Pillow reads.
LOSSY: dict[str, tuple[Any, str]] = {
    "jpeg": (lambda a: _save(a, format="JPEG", quality=95), "is JPEG"),
    "jpeg at quality 100": (lambda a: _save(a, format="JPEG", quality=100), "is JPEG"),
    "mpo": (lambda a: _save(a, format="MPO"), "is JPEG"),  # one frame: Pillow opens it as JPEG
    "lossy webp": (lambda a: _save(a, format="WEBP", quality=100), "lossy WebP"),
    "lossy webp with exif (extended)": (lambda a: _save(a, format="WEBP", exif=b"Exif\0\0"), "lossy WebP"),
    "animated lossy webp": (lambda a: _animated_webp(a, lossless=False), "lossy WebP"),
    "jpeg 2000": (lambda a: _save(a, format="JPEG2000"), "is JPEG2000"),
    "tiff with jpeg compression": (lambda a: _save(a, format="TIFF", compression="jpeg"), "jpeg compression"),
    "tiff with webp compression": (lambda a: _save(a, format="TIFF", compression="webp"), "webp compression"),
    "avif": (lambda a: _save(a, format="AVIF"), "is AVIF"),
}

LOSSLESS: dict[str, Any] = {
    "png": lambda a: _save(a, format="PNG"),
    "bmp": lambda a: _save(a, format="BMP"),
    "tiff": lambda a: _save(a, format="TIFF"),
    "tiff lzw": lambda a: _save(a, format="TIFF", compression="tiff_lzw"),
    "pgm": lambda a: _save(a, format="PPM"),
    "gif": lambda a: _save(a, format="GIF"),
    "lossless webp": lambda a: _save(a, format="WEBP", lossless=True),
    "lossless webp with exif (extended)": lambda a: _save(a, format="WEBP", lossless=True, exif=b"Exif\0\0"),
    "animated lossless webp": lambda a: _animated_webp(a, lossless=True),
}


def _write(path: Path, make: Any) -> Path:
    try:
        path.write_bytes(make(_trimap()))
    except (KeyError, OSError, ValueError) as err:  # a codec this Pillow lacks
        pytest.skip(f"Pillow cannot write it here: {err}")
    return path


@pytest.mark.parametrize("kind", sorted(LOSSY))
def test_lossy_label_images_are_refused_saying_to_save_as_png(tmp_path: Path, kind: str) -> None:
    if kind == "avif" and not features.check("avif"):
        pytest.skip("Pillow without AVIF")
    make, what = LOSSY[kind]
    # Named .png: the format is read from the contents (a JPEG renamed is still a JPEG).
    path = _write(tmp_path / "trimap.png", make)
    with pytest.raises(ValueError, match=r"save it as PNG") as err:
        read_label_image(path, "--mask")
    assert str(err.value).startswith(f"--mask: {path} ") and what in str(err.value)


@pytest.mark.parametrize("kind", sorted(LOSSLESS))
def test_lossless_label_images_are_read_exactly(tmp_path: Path, kind: str) -> None:
    path = _write(tmp_path / "trimap.img", LOSSLESS[kind])
    labels = read_label_image(path)
    # An animated file's first frame; RGB frames read back grey, as read_image(grayscale=True) reads them.
    assert np.array_equal(labels, _trimap())


def test_unreadable_label_files_keep_read_images_messages(tmp_path: Path) -> None:
    (tmp_path / "text.png").write_text("hello")
    with pytest.raises(ValueError, match="not an image"):
        read_label_image(tmp_path / "text.png")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_label_image(tmp_path / "missing.png")


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    return status, capsys.readouterr().err


@pytest.mark.parametrize("kind", ["jpeg", "lossy webp", "tiff with jpeg compression"])
def test_segment_refuses_a_lossy_trimap(tmp_path: Path, capsys: pytest.CaptureFixture, kind: str) -> None:
    image = np.full((40, 50, 3), 30, np.uint8)
    image[10:30, 15:35] = (40, 200, 220)
    write_image(tmp_path / "img.png", image)
    trimap = _write(tmp_path / "trimap.jpg", LOSSY[kind][0])
    out = tmp_path / "m.png"
    status, err = _run(["segment", str(tmp_path / "img.png"), "--mask", str(trimap), "-o", str(out)], capsys)
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"torchgrabcut segment: error: --mask: {trimap} ") and "save it as PNG" in err, err
    assert not out.exists()


def test_eval_refuses_lossy_ground_truth_naming_the_file_and_row(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ds = tmp_path / "ds"
    write_tiny_dataset(ds)
    gt = ds / "gt" / "im1.png"
    with Image.open(gt) as im:
        im.convert("L").save(gt, format="JPEG")  # JPEG bytes under the .png name eval reads
    status, err = _run(["eval", str(ds), "--device", "cpu", "--no-cv2", "--max-iter", "1"], capsys)
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "boxes.csv, line 3: gt: " in err and str(gt) in err and "is JPEG" in err, err
