"""Image files in and out: channel order and modes as cv2.imread reads them."""

from __future__ import annotations

import io
import os
import random
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from torchgrabcut import imageio
from torchgrabcut.imageio import LABEL_EXTENSIONS, check_output_path, read_image, write_image


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


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "P", "LA", "1"])
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
    else:
        im = im.convert(mode)
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


def _png_bytes(width: int, height: int, bit_depth: int = 8, colour_type: int = 2, idat: bytes = b"") -> bytes:
    """A PNG written by hand: a header declaring any size, and an IDAT of the given (tiny) raw data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(idat)) + chunk(b"IEND", b"")


def test_a_png_declaring_400_megapixels_is_refused_with_the_limit(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_bytes(20000, 20000))
    assert bomb.stat().st_size < 100
    with pytest.raises(ValueError, match=r"400\.0 megapixels, over the limit of 178,956,970 pixels") as info:
        read_image(bomb)
    assert "MAX_IMAGE_PIXELS" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="over the limit"):
        read_image(bomb, grayscale=True)


def test_our_limit_holds_when_pillows_is_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pillow's own check off: ours must still refuse from the header, before the 1.2 GB decode.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_bytes(20000, 20000))
    with pytest.raises(ValueError, match=r"20000x20000 = 400\.0 megapixels"):
        read_image(bomb)


def test_images_up_to_the_limit_are_read_without_pillows_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scaled down as shipped: Pillow warns above 1000 pixels and refuses above 2000, our limit is 2000.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    monkeypatch.setattr(imageio, "MAX_IMAGE_PIXELS", 2000)
    write_image(tmp_path / "band.png", _distinct_channels(30, 50))  # in Pillow's warning band
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_image(tmp_path / "band.png").shape == (30, 50, 3)
    write_image(tmp_path / "big.png", _distinct_channels(50, 81))
    with pytest.raises(ValueError, match=r"over the limit of 2,000 pixels \(torchgrabcut\.imageio\.MAX_IMAGE_PIXELS\)"):
        read_image(tmp_path / "big.png")  # Pillow refuses first; the message is still ours
    # Pillow's limit lowered below ours by other code: still one ValueError, saying why.
    monkeypatch.setattr(imageio, "MAX_IMAGE_PIXELS", 10_000)
    with pytest.raises(ValueError, match=r"big\.png is too large \(Image size \(4050 pixels\) exceeds limit"):
        read_image(tmp_path / "big.png")


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _encoded(fmt: str, array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, fmt)
    return buf.getvalue()


UNREADABLE = {
    "empty": lambda: b"",
    "text": lambda: b"hello, not an image\n",
    "truncated png": lambda: _truncated(_encoded("PNG", _distinct_channels(40, 50))),
    "truncated jpeg": lambda: _truncated(_encoded("JPEG", _distinct_channels(40, 50))),
    "png header only": lambda: _png_bytes(40, 50),
    "float tiff": lambda: _encoded("TIFF", np.ones((8, 9), np.float32)),
    "int32 tiff": lambda: _encoded("TIFF", np.full((8, 9), 70000, np.int32)),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_unreadable_files_give_one_line_value_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "file.png"
    path.write_bytes(UNREADABLE[kind]())
    for grayscale in (False, True):
        with pytest.raises(ValueError) as info:
            read_image(path, grayscale=grayscale)
        message = str(info.value)
        assert message.startswith("image: ") and str(path) in message and "\n" not in message


def test_folders_fifos_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is a folder, not an image file"):
        read_image(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_image(tmp_path / "missing.png")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.png")
        with pytest.raises(ValueError, match="not a regular file"):
            read_image(tmp_path / "fifo.png")  # opening it would wait for a writer forever


def test_damaged_files_never_raise_anything_but_value_error(tmp_path: Path) -> None:
    """Seeded byte edits of small files in each common format: a picture or one ValueError, no warning."""
    rng = random.Random(0)
    seeds = [_encoded(fmt, _distinct_channels(24, 32)) for fmt in ("PNG", "JPEG", "BMP", "TIFF", "GIF", "WEBP")]
    path = tmp_path / "damaged"
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            k = rng.randrange(len(data))
            if rng.random() < 0.8:
                data[k] = rng.randrange(256)
            else:
                del data[k:]
            if not data:
                break
        path.write_bytes(bytes(data))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                image = read_image(path)
            except ValueError as err:
                assert "\n" not in str(err)
            else:
                assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3


@pytest.mark.parametrize("kind", ["grey png", "colour png", "grey pgm", "grey tiff"])
def test_16_bit_images_are_scaled_like_cv2_imread(tmp_path: Path, kind: str) -> None:
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(2)
    shape = (21, 34, 3) if kind == "colour png" else (21, 34)
    array = rng.integers(0, 65536, shape).astype(np.uint16)
    path = tmp_path / ("img." + kind.split()[1])
    assert cv2.imwrite(str(path), array)
    ours = read_image(path)
    theirs = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert ours.shape == theirs.shape == (21, 34, 3)
    assert np.array_equal(ours, theirs)
    assert not (ours == 255).all()  # Pillow's own conversion clips 16-bit grey to white
    if kind != "colour png":
        with pytest.raises(ValueError, match="16-bit samples; a label mask or ground truth must be 8-bit"):
            read_image(path, grayscale=True)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied_like_cv2_imread(tmp_path: Path, orientation: int) -> None:
    cv2 = pytest.importorskip("cv2")
    rgb = np.full((20, 30, 3), 40, np.uint8)
    rgb[:4, :6] = 250  # a marker in the stored top-left corner
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = tmp_path / f"o{orientation}.jpg"
    Image.fromarray(rgb).save(path, exif=exif, quality=100)
    ours = read_image(path)
    theirs = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert ours.shape == theirs.shape == ((20, 30, 3) if orientation <= 4 else (30, 20, 3))
    assert np.abs(ours.astype(int) - theirs).max() <= 2
    assert read_image(path, grayscale=True).shape == ours.shape[:2]


@pytest.mark.parametrize("suffix", LABEL_EXTENSIONS)
def test_label_mask_formats_round_trip_exactly(tmp_path: Path, suffix: str) -> None:
    labels = np.random.default_rng(3).integers(0, 256, (33, 47), dtype=np.uint8)
    labels[:, :4] = np.arange(4)  # every GrabCut label
    path = check_output_path(tmp_path / f"mask{suffix}", "-o", labels=True)
    write_image(path, labels)
    assert np.array_equal(read_image(path, grayscale=True), labels)
    cv2 = pytest.importorskip("cv2")
    assert np.array_equal(cv2.imread(str(path), cv2.IMREAD_UNCHANGED), labels)


@pytest.mark.parametrize("name", ["mask.jpg", "mask.JPEG", "mask.webp", "mask.gif", "mask.jp2", "mask"])
def test_lossy_or_unknown_label_formats_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=r"a label mask needs a lossless format: \.png, \.bmp, \.tif, \.tiff, \.pgm"):
        check_output_path(tmp_path / name, "-o", labels=True)


def test_jpeg_would_change_the_labels(tmp_path: Path) -> None:
    # Why JPEG is refused for masks: a GrabCut mask does not come back as written.
    labels = np.zeros((32, 32), np.uint8)
    labels[8:24, 8:24] = 3
    labels[12:20, 12:20] = 1
    write_image(tmp_path / "mask.jpg", labels)
    assert not np.array_equal(read_image(tmp_path / "mask.jpg", grayscale=True), labels)


@pytest.mark.parametrize("kind", ["rgba png", "palette png", "16-bit png", "exif 6 jpeg", "grey bmp"])
def test_bytes_read_as_the_file_is(tmp_path: Path, kind: str) -> None:
    rgb = _distinct_channels(23, 31, seed=4)
    exif = Image.Exif()
    exif[0x0112] = 6
    data = {
        "rgba png": lambda: _encoded("PNG", np.dstack([rgb, rgb[..., 0]])),
        "palette png": lambda: _encoded("PNG", np.asarray(Image.fromarray(rgb).quantize(16))),
        "16-bit png": lambda: _encoded("PNG", rgb[..., 0].astype(np.uint16) * 256 + 3),
        "exif 6 jpeg": lambda: _jpeg_with_exif(rgb, exif),
        "grey bmp": lambda: _encoded("BMP", rgb[..., 1]),
    }[kind]()
    path = tmp_path / "file"
    path.write_bytes(data)
    for grayscale in (False, True):
        if kind == "16-bit png" and grayscale:
            with pytest.raises(ValueError, match=r"upload\.png has 16-bit samples"):
                imageio.read_image_bytes(data, "upload.png", grayscale=True)
            continue
        np.testing.assert_array_equal(imageio.read_image_bytes(data, grayscale=grayscale), read_image(path, grayscale))
    assert imageio.read_image_bytes(data).shape == ((31, 23, 3) if kind == "exif 6 jpeg" else (23, 31, 3))


def _jpeg_with_exif(rgb: np.ndarray, exif: Image.Exif) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", exif=exif)
    return buf.getvalue()


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_unreadable_bytes_give_one_line_value_error_naming_them(kind: str) -> None:
    with pytest.raises(ValueError) as info:
        imageio.read_image_bytes(UNREADABLE[kind](), "upload.png")
    message = str(info.value)
    assert message.startswith("image: ") and "upload.png" in message and "\n" not in message
    expected = {"empty": imageio.NotAnImage, "text": imageio.NotAnImage, "png header only": imageio.UndecodableImage}
    assert isinstance(info.value, expected.get(kind, ValueError))


def test_bytes_over_the_pixel_limit_are_refused_from_the_header(monkeypatch: pytest.MonkeyPatch) -> None:
    header_only = _png_bytes(300, 200)  # nothing to decode: a refusal from the header or "cannot read"
    with pytest.raises(
        imageio.ImageTooLarge, match=r"300x200 = 0\.1 megapixels, over the limit of 59,999 pixels$"
    ) as info:
        imageio.read_image_bytes(header_only, "x.png", max_pixels=59_999)
    assert (info.value.width, info.value.height, info.value.pixels, info.value.limit) == (300, 200, 60_000, 59_999)
    with pytest.raises(imageio.UndecodableImage):
        imageio.read_image_bytes(header_only, "x.png", max_pixels=60_000)
    # max_pixels lowers the library's limit, never raises it.
    monkeypatch.setattr(imageio, "MAX_IMAGE_PIXELS", 50_000)
    with pytest.raises(imageio.ImageTooLarge, match=r"over the limit of 50,000 pixels \(torchgrabcut\.imageio\.MAX"):
        imageio.read_image_bytes(header_only, "x.png", max_pixels=10**9)
    # Pillow refuses 400 megapixels in Image.open, before we see the size: still ours, with the count.
    with pytest.raises(imageio.ImageTooLarge, match=r"x\.png is 400\.0 megapixels, over the limit") as info:
        imageio.read_image_bytes(_png_bytes(20000, 20000), "x.png")
    assert (info.value.width, info.value.pixels, info.value.limit) == (None, 400_000_000, 50_000)


def test_readers_on_many_threads_leave_the_warning_filters_as_they_were() -> None:
    # Each read swaps the process-wide filter list for its own and puts back what it
    # found; readers on different threads (the server's requests) must not put back
    # each other's lists, or Pillow's warnings stay silenced (or a caller's filter is lost).
    import threading

    buf = io.BytesIO()
    Image.fromarray(_distinct_channels(64, 64)).save(buf, format="PNG")
    data = buf.getvalue()
    before = list(warnings.filters)
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            start.wait()
            for _ in range(200):
                imageio.read_image_bytes(data)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert warnings.filters == before
