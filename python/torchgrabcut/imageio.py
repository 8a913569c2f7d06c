"""Reading and writing images and masks without OpenCV (Pillow), BGR like OpenCV.

What :func:`read_image` accepts, and how (each refusal is a one-line ``ValueError``
or ``FileNotFoundError``, never a decoder's traceback); :func:`read_image_bytes` reads
the bytes of a file (an upload) the same way, with the same checks:

- PNG, JPEG, BMP, TIFF, GIF, WebP and PNM (PBM, PGM, PPM) files (:data:`ACCEPTED_FORMATS`,
  told by their contents, not their name); of a multi-frame file (TIFF pages, GIF, PNG or
  WebP animations, MPO) the first frame. Other formats Pillow reads are refused, ICO, CUR
  and ICNS above all: their directory need not tell the size of the picture inside;
- colour, grey, palette and bilevel images become 3-channel BGR, and an alpha channel
  is dropped, as ``cv2.imread(path, cv2.IMREAD_COLOR)`` does;
- 16-bit images are scaled to 8 bits by dropping the low byte, as ``cv2.imread`` does;
  with ``grayscale=True`` (label masks, ground truth) they are refused, since scaling
  would turn labels 0..3 into 0; 32-bit integer and float images are refused;
- the EXIF orientation is applied, as ``cv2.imread`` and image viewers do, so that a box
  read off the picture on screen lands on the same pixels;
- images over :data:`MAX_IMAGE_PIXELS` pixels are refused from the size in the file's
  header, before anything is decoded (a 68-byte PNG can declare 20000x20000 pixels); in
  the accepted formats that size is the size of the frame decoded (see ACCEPTED_FORMATS);
- truncated files, empty files, folders and files that are not images are refused.

Some refusals are subclasses of ``ValueError`` that say which, for callers that answer
each differently (the server: 413 for too large, 400 otherwise): :class:`ImageTooLarge`,
:class:`NotAnImage` and :class:`UndecodableImage`.

:func:`read_label_image` reads label images (trimaps, ground truth) and refuses lossy
formats, whose decoded values are not the labels saved.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import struct
import threading
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = [
    "ACCEPTED_FORMATS",
    "LABEL_EXTENSIONS",
    "MAX_IMAGE_PIXELS",
    "ImageTooLarge",
    "NotAnImage",
    "UndecodableImage",
    "check_output_path",
    "image_size_bytes",
    "overlay",
    "read_image",
    "read_image_bytes",
    "read_label_image",
    "write_image",
]

# The same number as Pillow's default refusal threshold (2 x Image.MAX_IMAGE_PIXELS), kept
# here so that the limit is ours, stated, and does not move if other code changes Pillow's.
# About 15 GB of GrabCut working memory on the CPU at this size.
MAX_IMAGE_PIXELS = 178_956_970

# The formats read, as Image.open's ``formats`` names them: those whose header gives the size
# of the picture load() decodes, so that the pixel limit is checked from the header before
# any pixel is decoded (Pillow's decoders cannot write outside the size the header set).
# Multi-frame files are read as their first frame, and the size checked is that frame's:
# GIF folds the first frame's extent into the size when the file is opened, APNG and WebP
# frames must lie inside the canvas (the size), a TIFF's first page and an MPO's first
# picture (JPEG's plugin opens MPO) have their own header; later frames are never decoded.
# Everything else is refused unread: ICO, CUR and ICNS list sizes in a directory that need
# not match the picture inside (a "256x256" entry holding a 13000x13000 PNG, which Pillow 13
# decodes inside Image.open), and the other plugins were not checked for such lies.
ACCEPTED_FORMATS = ("PNG", "JPEG", "BMP", "TIFF", "GIF", "WEBP", "PPM")
_OPENED_FORMATS = frozenset({*ACCEPTED_FORMATS, "MPO"})
_ACCEPTED_NAMES = "PNG, JPEG, BMP, TIFF, GIF, WebP or PNM (PBM/PGM/PPM)"

# Formats Pillow writes an 8-bit single-channel image to without loss (each is checked to
# read back identically, by Pillow and by cv2.imread, in tests/python/test_imageio.py).
LABEL_EXTENSIONS = (".png", ".bmp", ".tif", ".tiff", ".pgm")

# EXIF orientation tag values and the transposition that shows the picture upright.
_ORIENTATION = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_EXIF_ORIENTATION_TAG = 0x0112

# What Pillow's decoders raise on damaged data besides OSError (truncated or corrupt
# chunks, bad headers, impossible sizes); all of them mean "not a readable image".
_DECODE_ERRORS = (
    OSError,
    SyntaxError,
    EOFError,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    struct.error,
    zlib.error,
)


class _Refused(ValueError):
    """A file we read but do not accept (too large, 32-bit samples): its message is final."""


class ImageTooLarge(_Refused):
    """An image over the pixel limit, refused before its pixels were decoded.

    ``width`` and ``height`` are the header's (None when only Pillow's count of the
    pixels is known), ``pixels`` their product (None when not even that is known) and
    ``limit`` the limit it is over.
    """

    def __init__(
        self, message: str, limit: int, pixels: int | None, width: int | None = None, height: int | None = None
    ) -> None:
        super().__init__(message)
        self.limit, self.pixels, self.width, self.height = limit, pixels, width, height


class NotAnImage(ValueError):
    """Data in no format Pillow reads."""


class UndecodableImage(ValueError):
    """An image whose header was read but whose data cannot be decoded (truncated, damaged).

    ``detail`` is the decoder's own message.
    """

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def _check_input_file(p: Path) -> None:
    if p.is_dir():
        raise ValueError(f"image: {p} is a folder, not an image file")
    if not p.exists():
        raise FileNotFoundError(f"image: no such file: {p}")
    if not p.is_file():
        # A FIFO or a device: opening it could block forever.
        raise ValueError(f"image: {p} is not a regular file")
    if p.stat().st_size == 0:
        raise ValueError(f"image: {p} is empty (0 bytes)")


def _too_large(name: str, pixels: int, limit: int, size: str = "") -> str:
    whose = " (torchgrabcut.imageio.MAX_IMAGE_PIXELS)" if limit == MAX_IMAGE_PIXELS else ""
    return f"image: {name} is {size}{pixels / 1e6:.1f} megapixels, over the limit of {limit:,} pixels{whose}"


def _check_size(name: str, width: int, height: int, limit: int) -> None:
    if width * height > limit:
        message = _too_large(name, width * height, limit, f"{width}x{height} = ")
        raise ImageTooLarge(message, limit, width * height, width, height)


def _bomb(name: str, err: Exception, limit: int) -> ImageTooLarge:
    """Our error for Pillow's DecompressionBombError, which Image.open raises before we see the size."""
    # "Image size (N pixels) exceeds limit of M pixels, could be decompression bomb DOS attack."
    found = re.search(r"\((\d+) pixels\) exceeds limit of (\d+) pixels", str(err))
    if found is None:
        return ImageTooLarge(f"image: {name} is too large ({err})", limit, None)
    pixels, pillows = int(found.group(1)), int(found.group(2))
    if pixels > limit:
        return ImageTooLarge(_too_large(name, pixels, limit), limit, pixels)
    # Pillow's limit was lowered below ours by other code in this process.
    return ImageTooLarge(f"image: {name} is too large ({err})", pillows, pixels)


def _orientation(im: Image.Image) -> int:
    try:
        value = im.getexif().get(_EXIF_ORIENTATION_TAG, 1)
    except Exception:  # a damaged EXIF block is ignored, as cv2.imread ignores it
        return 1
    return value if isinstance(value, int) else 1


def _decode(im: Image.Image, name: str, grayscale: bool, orientation: int) -> np.ndarray:
    """The loaded image as (H, W) grey or (H, W, 3) RGB uint8, upright."""
    # Pillow reads a 16-bit PGM as 32-bit mode I; every other mode I or F file has wider samples.
    sixteen_bit = im.mode.startswith("I;16") or (im.mode == "I" and im.format == "PPM")
    method = _ORIENTATION.get(orientation)
    if method is not None:
        im = im.transpose(method)
    if sixteen_bit:
        if grayscale:
            raise _Refused(f"image: {name} has 16-bit samples; a label mask or ground truth must be 8-bit")
        grey = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
        return np.repeat(grey[:, :, None], 3, axis=2)
    if im.mode in ("I", "F"):
        raise _Refused(f"image: {name} has 32-bit {'float' if im.mode == 'F' else 'integer'} samples; expected 8-bit")
    # Transparency is dropped, as cv2.imread drops it; kept, it makes convert() warn for
    # palette images, and conversions run outside the warning filters (see _read).
    im.info.pop("transparency", None)
    if grayscale:
        return np.asarray(im.convert("L"), dtype=np.uint8).copy()
    return np.asarray(im.convert("RGB"), dtype=np.uint8)


_FILTERS_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_pillow() -> Iterator[None]:
    """Pillow's warnings about what it reads from headers and metadata, silenced.

    Our own limit is checked from the header; Pillow's warning between its two thresholds
    would only repeat it for an image we accept. Its plugins' warnings about damaged
    metadata (TIFF tags, EXIF) concern files whose pixels do decode. catch_warnings swaps
    the process-wide filter list and puts back what it found: two readers on different
    threads (the server's requests) could each put back the other's filters, so readers
    take turns here, for the header and metadata only (milliseconds), never for a decode.
    """
    with _FILTERS_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"PIL\.")
        yield


def _format_of(prefix: bytes) -> str | None:
    """The Pillow format whose signature starts ``prefix`` (only to name it in a refusal)."""
    Image.init()
    for fmt in Image.ID:
        accept = Image.OPEN[fmt][1]
        try:
            if accept is not None and accept(prefix):
                return fmt
        except Exception:  # a plugin's signature test on odd bytes: not that format
            continue
    return None


def _not_accepted(name: str, prefix: bytes) -> NotAnImage:
    fmt = _format_of(prefix)
    if fmt is None or fmt in _OPENED_FORMATS:  # no signature, or an accepted one whose header is damaged
        return NotAnImage(f"image: {name} is not an image in a format torchgrabcut reads ({_ACCEPTED_NAMES})")
    return NotAnImage(
        f"image: {name} is {fmt}, a format torchgrabcut does not read: expected {_ACCEPTED_NAMES}, "
        "whose header gives the size of the picture decoded"
    )


def _open_header(source: Path | io.BytesIO, name: str, limit: int) -> Image.Image:
    """The image opened, its header read and nothing decoded, once its format and size pass.

    Call under _quiet_pillow. Only the accepted formats' plugins are tried: an ICO or ICNS
    file is never handed to its plugin, which decodes the picture inside to learn its size.
    """
    try:
        im = Image.open(source, formats=ACCEPTED_FORMATS)
    except UnidentifiedImageError as err:
        if isinstance(source, io.BytesIO):
            prefix = source.getvalue()[:16]
        else:
            with open(source, "rb") as f:
                prefix = f.read(16)
        raise _not_accepted(name, prefix) from err
    try:
        if im.format not in _OPENED_FORMATS:  # a plugin registered by other code under an accepted name
            raise _not_accepted(name, b"")
        _check_size(name, *im.size, limit)
    except BaseException:
        im.close()
        raise
    return im


def _read(source: Path | io.BytesIO, name: str, grayscale: bool, max_pixels: int | None) -> np.ndarray:
    """What read_image and read_image_bytes return, from a file or its bytes; ``name`` is for messages."""
    limit = MAX_IMAGE_PIXELS if max_pixels is None else min(max_pixels, MAX_IMAGE_PIXELS)
    try:
        with _quiet_pillow():
            im = _open_header(source, name, limit)
        with im:
            # Decoded outside the lock, so that reads on other threads run meanwhile; the
            # accepted formats warn only while headers and metadata are read (tested).
            im.load()
            _check_size(name, *im.size, limit)  # a format whose decoded size differs from its header's
            with _quiet_pillow():
                orientation = _orientation(im)
            array = _decode(im, name, grayscale, orientation)
    except (_Refused, NotAnImage):
        raise
    except Image.DecompressionBombError as err:
        raise _bomb(name, err, limit) from err
    except MemoryError as err:
        raise ValueError(f"image: {name} does not fit in memory") from err
    except _DECODE_ERRORS as err:
        raise UndecodableImage(f"image: cannot read {name} as an image ({err})", str(err)) from err
    if grayscale:
        return array
    # Channel by channel: a third of the time of copying a reversed-stride view
    # (which the dataset job's loader workers pay per image).
    bgr = np.empty_like(array)
    bgr[..., 0] = array[..., 2]
    bgr[..., 1] = array[..., 1]
    bgr[..., 2] = array[..., 0]
    return bgr


def read_image(path: str | Path, grayscale: bool = False) -> np.ndarray:
    """An image file as uint8: (H, W, 3) in BGR order (as cv2.imread), or (H, W).

    See the module's docstring for the formats, modes and limits; every file that
    cannot be read gives one ``ValueError`` (``FileNotFoundError`` when missing).
    """
    p = Path(path)
    _check_input_file(p)
    return _read(p, str(p), grayscale, None)


def read_image_bytes(
    data: bytes, name: str = "image", grayscale: bool = False, max_pixels: int | None = None
) -> np.ndarray:
    """The bytes of an image file as :func:`read_image` reads the file: same result, same refusals.

    ``name`` is what the messages call it. ``max_pixels`` lowers the pixel limit for
    this call (it cannot raise it past :data:`MAX_IMAGE_PIXELS`); the size is checked
    from the header before anything is decoded.
    """
    if not data:
        raise NotAnImage(f"image: {name} is empty (0 bytes)")
    return _read(io.BytesIO(data), name, grayscale, max_pixels)


def image_size_bytes(data: bytes, name: str = "image", max_pixels: int | None = None) -> tuple[int, int]:
    """(width, height) of the image in ``data``, from its header alone: nothing is decoded.

    Refused as :func:`read_image_bytes` refuses it, when the refusal can be told from the
    header (not an image, not an accepted format, over the pixel limit): for a caller that
    must know what a decode will cost before it starts one (the server's memory budget).
    The size is as stored, before the EXIF orientation is applied.
    """
    if not data:
        raise NotAnImage(f"image: {name} is empty (0 bytes)")
    limit = MAX_IMAGE_PIXELS if max_pixels is None else min(max_pixels, MAX_IMAGE_PIXELS)
    try:
        with _quiet_pillow():
            im = _open_header(io.BytesIO(data), name, limit)
            size: tuple[int, int] = im.size
            im.close()
    except (_Refused, NotAnImage):
        raise
    except Image.DecompressionBombError as err:
        raise _bomb(name, err, limit) from err
    except _DECODE_ERRORS as err:
        raise UndecodableImage(f"image: cannot read {name} as an image ({err})", str(err)) from err
    return size


# Label images: the formats whose decoded samples are the saved ones (as Image.open names
# them), and the lossy formats Pillow reads; TIFF and WebP are lossless only in some of
# their compressions, checked by _lossy_label_format. A file in neither list is left to
# _read, which refuses the formats it does not accept.
_LOSSLESS_FORMATS = frozenset({"PNG", "BMP", "TIFF", "PPM", "GIF", "WEBP"})
_LOSSY_FORMATS = frozenset({"JPEG", "MPO", "JPEG2000", "AVIF"})
_LOSSY_TIFF_COMPRESSIONS = frozenset({"jpeg", "tiff_jpeg", "webp"})


def _webp_is_lossy(data: bytes) -> bool:
    """True when a WebP file holds a lossy (VP8) bitstream, False when only lossless (VP8L) ones.

    The RIFF chunks are walked: a simple file is one VP8 or VP8L chunk; an extended one
    (VP8X) holds one of them, or animation frames (ANMF) that each hold one.
    """
    found_lossless, at = False, 12
    while at + 8 <= len(data):
        kind, size = data[at : at + 4], int.from_bytes(data[at + 4 : at + 8], "little")
        if kind == b"VP8 ":
            return True
        found_lossless |= kind == b"VP8L"
        # A frame's sub-chunks start after its 16-byte frame header; other chunks are skipped.
        at = at + 8 + 16 if kind == b"ANMF" else at + 8 + size + (size & 1)
    return not found_lossless  # nothing recognised: not known to be lossless


def _lossy_label_format(p: Path) -> str | None:
    """What makes the file at ``p`` unfit for labels (``"JPEG"``, ``"lossy WebP"``), or None."""
    Image.init()
    # Only these plugins may open it: Image.open reads their headers alone, whereas some
    # other formats' plugins decode inside Image.open (an ICO's PNG), before any size check.
    formats = sorted(f for f in _LOSSLESS_FORMATS | _LOSSY_FORMATS if f in Image.OPEN)
    try:
        with _FILTERS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # only the format is read here; _read warns or refuses
            with Image.open(p, formats=formats) as im:
                fmt, compression = str(im.format), str(im.info.get("compression", ""))
    except Exception:  # another format, not an image, damaged: _read accepts or refuses it
        return None
    if fmt in _LOSSY_FORMATS:
        return fmt
    if fmt == "TIFF" and compression in _LOSSY_TIFF_COMPRESSIONS:
        return f"TIFF with {compression} compression"
    if fmt == "WEBP" and _webp_is_lossy(p.read_bytes()):
        return "lossy WebP"
    return None


def read_label_image(path: str | Path, what: str = "label image") -> np.ndarray:
    """An 8-bit label image (a trimap of labels 0..3, ground truth) as (H, W) uint8.

    As ``read_image(path, grayscale=True)``, and a file in a lossy format (JPEG, lossy
    WebP, JPEG 2000, AVIF, TIFF with JPEG or WebP compression) is refused with a
    ValueError saying to save it as PNG: its decoded values are not the labels saved (a
    JPEG trimap of labels 0..3 reads back with 1s and 2s around every edge). The format
    is read from the file's contents, not its name. ``what`` names the file's role in the
    message (``--mask``, ``gt``).
    """
    p = Path(path)
    _check_input_file(p)
    lossy = _lossy_label_format(p)
    if lossy is not None:
        raise ValueError(
            f"{what}: {p} is {lossy}: a lossy format changes label values around every edge; save it as PNG"
        )
    return _read(p, str(p), True, None)


def check_output_path(path: str | Path, what: str, labels: bool = False, extensions: tuple[str, ...] = ()) -> Path:
    """``path`` as a Path when a file can be written there; ValueError otherwise.

    Called before any work, so that a long run does not end on a bad output name.
    ``labels``: a label mask, which only lossless formats keep (:data:`LABEL_EXTENSIONS`);
    JPEG would turn labels 0..3 into other values. ``extensions``: the suffixes allowed,
    when not the image formats Pillow writes.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if labels:
        if suffix not in LABEL_EXTENSIONS:
            raise ValueError(
                f"{what}: {p}: a label mask needs a lossless format: {', '.join(LABEL_EXTENSIONS)} "
                f"(got {suffix or 'no extension'})"
            )
    elif extensions:
        if suffix.lstrip(".") not in extensions:
            raise ValueError(f"{what}: {p}: expected one of .{', .'.join(extensions)} (got {suffix or 'no extension'})")
    else:
        writable = Image.registered_extensions()
        if writable.get(suffix) not in Image.SAVE:
            raise ValueError(f"{what}: {p}: not an image format Pillow writes (got {suffix or 'no extension'})")
    if p.is_dir():
        raise ValueError(f"{what}: {p} is a folder")
    parent = p.parent
    if not parent.is_dir():
        raise ValueError(f"{what}: {p}: no such folder: {parent}")
    if p.exists() and not os.access(p, os.W_OK):
        raise ValueError(f"{what}: {p}: the file exists and is read-only")
    if not p.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{what}: {p}: cannot create files in {parent} (permission denied)")
    return p


def write_image(path: str | Path, image: np.ndarray) -> None:
    """Writes (H, W) grey or (H, W, 3) BGR uint8 as PNG (or any format Pillow knows by suffix).

    The file is written under a temporary name in the same folder, then renamed to ``path``:
    a write that fails (a full disk) leaves no empty or partial file there, and a file that
    was there as it was. The OSError then names ``path``.
    """
    p = Path(path)
    fmt = Image.registered_extensions().get(p.suffix.lower())
    if fmt is None:
        raise ValueError(f"{p}: not an image format Pillow writes (got {p.suffix or 'no extension'})")
    arr = image if image.ndim == 2 else image[:, :, ::-1]
    picture = Image.fromarray(np.ascontiguousarray(arr))
    dest = p.resolve() if p.is_symlink() else p  # the file a link points to is the one replaced, as before
    tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}-{threading.get_ident()}")
    try:
        with _created(tmp) as f:
            picture.save(f, format=fmt)
        os.replace(tmp, dest)
    except BaseException as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(err, OSError):
            raise _write_error(err, p) from err
        raise


def _created(tmp: Path) -> io.BufferedWriter:
    """A new file at ``tmp``, created as open() creates one (mode 0o666 less the umask)."""
    # O_EXCL: never write through a link someone put at the temporary name; one left by
    # a killed process of the same id is removed first.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileExistsError:
        tmp.unlink()
        fd = os.open(tmp, flags, 0o666)
    return os.fdopen(fd, "wb")


def _write_error(err: OSError, path: Path) -> OSError:
    """``err`` naming ``path`` (a full disk's is "[Errno 28] No space left on device", no file)."""
    if err.errno is None:  # Pillow's own (a mode the format cannot hold)
        return OSError(f"cannot write {path}: {err}")
    return OSError(err.errno, f"cannot write {path}: {err.strerror or err}")


def overlay(image: np.ndarray, mask: np.ndarray, alpha: float = 0.55) -> np.ndarray:
    """The image with its background darkened and the foreground outlined in green (BGR)."""
    fg = (mask & 1).astype(bool)
    out = image.astype(np.float32)
    out[~fg] *= 1.0 - alpha
    edge = fg & ~(np.roll(fg, 1, 0) & np.roll(fg, -1, 0) & np.roll(fg, 1, 1) & np.roll(fg, -1, 1))
    out[edge] = (0, 255, 0)
    return out.clip(0, 255).astype(np.uint8)
