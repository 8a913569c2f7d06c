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


# --- the pixel limit holds for every format: the size checked is the size decoded ---------------

LIMIT = 10_000  # pixels: the crafted "large" pictures are 40 times that


def _saved(fmt: str, frames: list[tuple[int, int]], **kwargs: object) -> bytes:
    """A file of ``fmt`` holding one frame per (width, height), the first as the main picture."""
    images = [Image.fromarray(_distinct_channels(h, w, seed=i)) for i, (w, h) in enumerate(frames)]
    buf = io.BytesIO()
    if len(images) > 1:
        kwargs = {"save_all": True, "append_images": images[1:], **kwargs}
    images[0].save(buf, fmt, **kwargs)
    return buf.getvalue()


def _directory_icon(kind: int, inner: bytes) -> bytes:
    """An ICO (kind 1) or CUR (kind 2) whose directory says 256x256 and holds ``inner``."""
    entry = struct.pack("<BBBBHHII", 0, 0, 0, 0, 1, 32, len(inner), 6 + 16)  # 0 means 256
    return struct.pack("<HHH", 0, kind, 1) + entry + inner


def _icns(inner: bytes) -> bytes:
    """An ICNS whose table says 128x128 (type ic07) and holds ``inner``."""
    return b"icns" + struct.pack(">I", 8 + 8 + len(inner)) + b"ic07" + struct.pack(">I", 8 + len(inner)) + inner


def _gif_with_a_larger_second_frame() -> bytes:
    """A GIF whose logical screen and first frame are 20x10 and whose second frame is 200x200."""
    first = _saved("GIF", [(20, 10)])
    frame = _saved("GIF", [(200, 200)])
    # The second file's image (from its descriptor on) appended before the first's trailer.
    descriptor = frame.index(b"\x2c\x00\x00\x00\x00\xc8\x00\xc8\x00")
    return first[:-1] + frame[descriptor:-1] + b";"


def _gif_whose_first_frame_is_larger_than_its_screen() -> bytes:
    data = bytearray(_saved("GIF", [(200, 200)]))
    data[6:10] = struct.pack("<HH", 20, 10)  # the logical screen says 20x10
    return bytes(data)


def _big_png() -> bytes:
    return _saved("PNG", [(200, 200)])  # 40 000 pixels, over LIMIT


# Files whose header (directory, table) need not tell the size of the picture inside, and
# formats that were not checked for it: refused from their signature, nothing decoded.
REFUSED_FORMATS = {
    "ico holding a larger png": lambda: _directory_icon(1, _big_png()),
    "cur holding a larger png": lambda: _directory_icon(2, _big_png()),
    "icns holding a larger png": lambda: _icns(_big_png()),
    "ico": lambda: _saved("ICO", [(16, 16)]),
    "icns": lambda: _saved("ICNS", [(16, 16)]),
    "tga": lambda: _saved("TGA", [(16, 16)]),
    "pcx": lambda: _saved("PCX", [(16, 16)]),
    "sgi": lambda: _saved("SGI", [(16, 16)]),
    "qoi": lambda: _saved("QOI", [(16, 16)]),
    "dds": lambda: _saved("DDS", [(16, 16)]),
}

# Multi-frame files in the accepted formats: the first frame is read, its size checked
# from the header (a first frame over the limit is refused before it is decoded).
FIRST_FRAMES = {
    "tiff, second page larger": (lambda: _saved("TIFF", [(20, 10), (200, 200)]), (10, 20)),
    "tiff, first page larger": (lambda: _saved("TIFF", [(200, 200), (20, 10)]), None),
    "gif, second frame larger": (_gif_with_a_larger_second_frame, (10, 20)),
    "gif, first frame larger than its screen": (_gif_whose_first_frame_is_larger_than_its_screen, None),
    "apng": (lambda: _saved("PNG", [(20, 10)] * 3), (10, 20)),
    "apng over the limit": (lambda: _saved("PNG", [(200, 200)] * 2), None),
    "animated webp": (lambda: _saved("WEBP", [(20, 10)] * 3, lossless=True), (10, 20)),
    "animated webp over the limit": (lambda: _saved("WEBP", [(200, 200)] * 2), None),
    "mpo, second picture larger": (lambda: _saved("MPO", [(20, 10), (200, 200)]), (10, 20)),
    "mpo, first picture larger": (lambda: _saved("MPO", [(200, 200), (20, 10)]), None),
}


@pytest.fixture
def allocations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pixel count of every image Pillow allocates from now on (its decoders write into them)."""
    sizes: list[int] = []
    for name in ("new", "fill"):
        made = getattr(Image.core, name)

        def counted(mode: str, size: tuple[int, int], *args: object, _made=made) -> object:  # type: ignore[no-untyped-def]
            sizes.append(size[0] * size[1])
            return _made(mode, size, *args)

        monkeypatch.setattr(Image.core, name, counted)
    return sizes


def _read_both_ways(data: bytes, tmp_path: Path) -> list[object]:
    """read_image_bytes and read_image of the same data at LIMIT: each result or its ValueError."""
    path = tmp_path / "file.png"  # the name says PNG: the contents decide
    path.write_bytes(data)
    imageio_limit = imageio.MAX_IMAGE_PIXELS
    out: list[object] = []
    for read in (lambda: imageio.read_image_bytes(data, "file.png", max_pixels=LIMIT), lambda: read_image(path)):
        imageio.MAX_IMAGE_PIXELS = LIMIT  # read_image has no max_pixels: the library's limit, lowered
        try:
            out.append(read())
        except ValueError as err:
            out.append(err)
        finally:
            imageio.MAX_IMAGE_PIXELS = imageio_limit
    return out


@pytest.mark.parametrize("kind", sorted(REFUSED_FORMATS))
def test_formats_whose_header_may_not_tell_the_size_are_refused_undecoded(
    kind: str, tmp_path: Path, allocations: list[int]
) -> None:
    data = REFUSED_FORMATS[kind]()
    allocations.clear()
    for result in _read_both_ways(data, tmp_path):
        assert isinstance(result, imageio.NotAnImage), result
        message = str(result)
        assert "file.png" in message and "PNG, JPEG, BMP, TIFF, GIF, WebP or PNM" in message and "\n" not in message
    assert allocations == []  # nothing decoded, not even the small pictures
    with pytest.raises(imageio.NotAnImage):
        imageio.image_size_bytes(data)


def test_an_ico_is_named_in_its_refusal() -> None:
    with pytest.raises(imageio.NotAnImage, match=r"icon\.ico is ICO, a format torchgrabcut does not read"):
        imageio.read_image_bytes(_directory_icon(1, _big_png()), "icon.ico")


@pytest.mark.parametrize("kind", sorted(FIRST_FRAMES))
def test_multi_frame_files_are_read_as_their_first_frame_within_the_limit(
    kind: str, tmp_path: Path, allocations: list[int]
) -> None:
    make, shape = FIRST_FRAMES[kind]
    data = make()
    allocations.clear()
    results = _read_both_ways(data, tmp_path)
    assert max(allocations, default=0) <= LIMIT  # no picture over the limit was allocated
    for result in results:
        if shape is None:
            assert isinstance(result, imageio.ImageTooLarge), result
            assert "over the limit of 10,000 pixels" in str(result)
        else:
            assert isinstance(result, np.ndarray) and result.shape == (*shape, 3), result
    if shape is not None:
        assert imageio.image_size_bytes(data) == shape[::-1]
        # and it really holds a larger frame, which is never decoded
        with Image.open(io.BytesIO(data)) as im:
            assert im.n_frames > 1


def test_image_size_bytes_reads_the_header_only(allocations: list[int]) -> None:
    data = _saved("PNG", [(300, 200)])
    allocations.clear()
    assert imageio.image_size_bytes(data, "x.png") == (300, 200)
    with pytest.raises(imageio.ImageTooLarge, match=r"x\.png is 300x200 = 0\.1 megapixels"):
        imageio.image_size_bytes(data, "x.png", max_pixels=59_999)
    assert allocations == []
    with pytest.raises(imageio.NotAnImage, match="empty"):
        imageio.image_size_bytes(b"")
    with pytest.raises(imageio.NotAnImage, match="not an image in a format torchgrabcut reads"):
        imageio.image_size_bytes(b"hello, not an image")


def test_a_decode_does_not_wait_for_another_threads_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    # One slow decode (a large upload on the server) must not hold up reads on other threads.
    import threading

    from PIL import ImageFile

    slow, small = _saved("PNG", [(90, 90)]), _saved("PNG", [(20, 10)])
    started, release = threading.Event(), threading.Event()
    load = ImageFile.ImageFile.load

    def load_slowly(self: ImageFile.ImageFile) -> object:
        if self.size == (90, 90):
            started.set()
            release.wait(30)
        return load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", load_slowly)
    thread = threading.Thread(target=imageio.read_image_bytes, args=(slow,))
    thread.start()
    try:
        assert started.wait(30)
        done = threading.Event()
        reader = threading.Thread(target=lambda: (imageio.read_image_bytes(small), done.set()))
        reader.start()
        assert done.wait(10), "a small read waited for the slow decode"
        reader.join()
    finally:
        release.set()
        thread.join(30)
