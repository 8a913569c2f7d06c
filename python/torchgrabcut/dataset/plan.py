"""Reading a COCO annotation file and planning the work: which boxes to segment, and in which crop.

Boxes. A COCO ``bbox`` is ``[x, y, w, h]`` in continuous pixel coordinates
(pixel ``i`` covers ``[i, i + 1)``). The box given to GrabCut is every pixel the
bbox touches, half-open: ``x0 = floor(x)``, ``x1 = ceil(x + w)`` (a 1e-6 slack
keeps float noise such as ``100.0000001`` from adding a pixel), clipped to the
image.

Crops. GrabCut learns the background from the pixels around the box, so each box
is cut out with a margin of ``max(min_margin, ceil(margin * side))`` pixels on
each side (the box's width for left/right, its height for top/bottom), clipped to
the image. A box that fills its whole crop (a bbox covering the whole image)
still works: GrabCut then takes the crop's one-pixel border as background.

Skipped annotations (kept unchanged in the output, with ``grabcut_skipped``
saying why): ``iscrowd`` regions (many objects under one box, not an instance);
boxes under 2 pixels wide or high (``w < 2`` or ``h < 2``, or after clipping);
boxes entirely outside the image; a box filling a crop under 3 pixels (nothing
to learn a background from).

Ground truth. An annotation that already has a ``segmentation`` (polygons,
uncompressed or compressed RLE, as pycocotools reads them) is the ground truth
the IoU report compares against; :func:`gt_rle` turns it into a compressed RLE.
pycocotools trusts its input (NaN or huge polygon coordinates make it allocate
without bound or crash; RLE counts that do not add up to the image's pixels make
it loop forever, holding the GIL), so every value is checked here first
(:func:`segmentation_error`) and a malformed one never reaches it: the job then
segments the box as usual but does not score it (see :mod:`.pipeline`).

Ids. Image ``id`` and annotation ``image_id`` are JSON integers (not ``true``,
not ``1.0``, not ``"1"``: Python would take 1, 1.0 and true as one key), and
``iscrowd`` is 0 or 1 (or false / true; absent means 0); anything else stops the
run at start with a one-line error naming the entry and the field.

Also checked at start, each with one line naming the entry: an image's
``height`` and ``width`` (a record with only one of them, or a ``null``, is read
as one with neither: the size comes from the image); every ``bbox`` of the
images a process does, whether or not their sizes are known; ``file_name``
values that leave the images folder (absolute, or ``..`` above it), refused
unless allowed; and every string and key of the document, which the merge must
write back as UTF-8 (a lone surrogate, such as the escape ``"\udcff"``, parses
but cannot be written).
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "SKIP_CROWD",
    "SKIP_NO_BACKGROUND",
    "SKIP_OUTSIDE",
    "SKIP_SMALL",
    "BoxPlan",
    "ImagePlan",
    "box_crop",
    "check_bbox",
    "check_file_names",
    "decode_rle_counts",
    "gt_rle",
    "index_images",
    "load_coco",
    "plan_boxes",
    "require_dataset_deps",
    "segmentation_error",
]

SKIP_CROWD = "iscrowd"
SKIP_SMALL = "box under 2 px"
SKIP_OUTSIDE = "box outside the image"
SKIP_NO_BACKGROUND = "box fills a crop under 3 px"

_EPS = 1e-6


def require_dataset_deps() -> tuple[Any, Any]:
    """(pycocotools.mask, tqdm.tqdm), or a RuntimeError that says how to install them."""
    try:  # optional dependencies (the dataset extra), imported when the job runs
        from pycocotools import mask as mask_utils
        from tqdm import tqdm
    except ImportError as err:
        raise RuntimeError(
            f"the dataset job needs pycocotools and tqdm ({err}); pip install torchgrabcut[dataset]"
        ) from err
    return mask_utils, tqdm


@dataclass(frozen=True)
class BoxPlan:
    ann: int  # index into the file's "annotations" list
    crop: tuple[int, int, int, int]  # half-open (x0, y0, x1, y1) in the image
    box: tuple[int, int, int, int]  # half-open (x0, y0, x1, y1) in the crop


@dataclass
class ImagePlan:
    image: int  # index into the file's "images" list
    file_name: str
    height: int | None  # from the file; None when it does not say (the decoded image's size is used)
    width: int | None
    anns: list[int] = field(default_factory=list)  # all its annotations, in file order
    boxes: list[BoxPlan] = field(default_factory=list)  # the ones to segment
    skipped: dict[int, str] = field(default_factory=dict)  # annotation index -> reason

    def needs_image(self) -> bool:
        """Whether the image must be read: to segment a box, or to learn its size."""
        return bool(self.boxes) or (self.height is None and len(self.skipped) < len(self.anns))


def load_coco(path: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed annotation file and the SHA-256 of its bytes; errors say what is wrong in one line."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--coco: no such file: {p}")
    data = p.read_bytes()
    # A large file is millions of small objects: the cyclic collector would run hundreds of
    # times while they are made, and a parse makes no cycles for it to find.
    collecting = gc.isenabled()
    gc.disable()
    try:
        coco = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"--coco: {p} is not valid JSON ({err})") from err
    finally:
        if collecting:
            gc.enable()
    if not isinstance(coco, dict):
        raise ValueError(f"--coco: expected a JSON object with 'images' and 'annotations', got {type(coco).__name__}")
    for key in ("images", "annotations"):
        if not isinstance(coco.get(key), list):
            raise ValueError(f"--coco: expected a list under {key!r} in {p}")
    bad_text = _unwritable_text(coco, data)
    if bad_text is not None:
        raise ValueError(
            f"--coco: {bad_text} holds a lone surrogate (a \\ud800-\\udfff escape without its pair), "
            f"which cannot be written back as UTF-8; correct it in {p}"
        )
    return coco, hashlib.sha256(data).hexdigest()


# What a lone surrogate can come from in UTF-8 text: a \\uD800..\\uDFFF escape, or those code
# points' own 3-byte encodings, which Python's reader passes too (it decodes bytes with
# "surrogatepass"). The document is walked only when the bytes hold one of these, so a
# clean file of millions of annotations pays for one regular-expression scan, not a walk.
_SURROGATE_HINT = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _unwritable_text(coco: Any, data: bytes) -> str | None:
    """Where the document holds a string or key that UTF-8 cannot encode ("info.name",
    "annotations[3].caption", "info: a key '...'"), or None."""
    if json.detect_encoding(data) in ("utf-8", "utf-8-sig") and not _SURROGATE_HINT.search(data):
        return None
    stack: list[tuple[Any, str]] = [(coco, "")]
    while stack:  # iterative: a deep document must not hit the recursion limit here
        value, where = stack.pop()
        if isinstance(value, str):
            if not _encodable(value):
                return f"{where}: {_short(value)}"
        elif isinstance(value, dict):
            for key in value:
                if not _encodable(key):
                    return f"{where or 'the top level'}: a key {_short(key)}"
            # reversed: popped in file order, so the first such string is the one named
            stack.extend((v, f"{where}.{k}" if where else k) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(value))))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_id(v: Any, where: str, key: str) -> int:
    if not _json_int(v):
        raise ValueError(f"--coco: {where}: {key}: expected an integer, got {v!r}")
    return int(v)


def _is_crowd(ann: dict[str, Any], where: str) -> bool:
    v = ann.get("iscrowd", 0)
    if v is True or v is False or (_json_int(v) and v in (0, 1)):
        return bool(v)
    raise ValueError(f"--coco: {where}: iscrowd: expected 0 or 1 (or false / true), got {v!r}")


def _ann_where(a: int, ann: dict[str, Any]) -> str:
    return f"annotations[{a}] (id {ann.get('id')!r})"


# The largest height or width the file may give: an image side the operators take (int32).
_MAX_SIDE = 2**31 - 1


def _size(image: dict[str, Any], key: str, where: str) -> int | None:
    v = image.get(key)
    if v is None:
        return None
    # Python's JSON reader gives NaN and Infinity as floats, and 1e300 as a float int() takes.
    whole = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v == math.floor(v))
    if isinstance(v, bool) or not whole or not 0 < v <= _MAX_SIDE:
        raise ValueError(f"--coco: {where}: expected a positive integer {key} (at most {_MAX_SIDE}), got {v!r}")
    return int(v)


def check_bbox(bbox: Any) -> tuple[float, float, float, float]:
    """``bbox`` as four floats; ValueError when it is not four finite numbers with w, h >= 0."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        raise ValueError(f"expected bbox [x, y, w, h], got {bbox!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in bbox):
        raise ValueError(f"expected bbox of four finite numbers, got {bbox!r}")
    x, y, w, h = (float(v) for v in bbox)
    if w < 0 or h < 0:
        raise ValueError(f"expected bbox with w >= 0 and h >= 0, got {bbox!r}")
    return x, y, w, h


def box_crop(
    bbox: Any, width: int, height: int, margin: float, min_margin: int
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]] | str:
    """(crop in the image, box in the crop), both half-open, or the reason to skip the box.

    Raises ValueError when ``bbox`` is not four finite numbers with w, h >= 0.
    """
    x, y, w, h = check_bbox(bbox)
    if w < 2 or h < 2:
        return SKIP_SMALL
    x0, y0 = math.floor(x + _EPS), math.floor(y + _EPS)
    x1, y1 = math.ceil(x + w - _EPS), math.ceil(y + h - _EPS)
    if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        return SKIP_OUTSIDE
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return SKIP_SMALL
    mx = max(min_margin, math.ceil(margin * (x1 - x0) - _EPS))
    my = max(min_margin, math.ceil(margin * (y1 - y0) - _EPS))
    cx0, cy0, cx1, cy1 = max(x0 - mx, 0), max(y0 - my, 0), min(x1 + mx, width), min(y1 + my, height)
    if (x0, y0, x1, y1) == (cx0, cy0, cx1, cy1) and min(x1 - x0, y1 - y0) < 3:
        return SKIP_NO_BACKGROUND
    return (cx0, cy0, cx1, cy1), (x0 - cx0, y0 - cy0, x1 - cx0, y1 - cy0)


def index_images(coco: dict[str, Any]) -> list[ImagePlan]:
    """One plan per image that has annotations, in the order of the file's ``images``, boxes not planned yet.

    Checks the file's structure (images, ids, annotations and their image ids);
    :func:`plan_boxes` plans the boxes, and checks them, for the images a process
    will do: a process of a multi-GPU run plans its share only.
    """
    by_id: dict[int, ImagePlan] = {}
    plans: list[ImagePlan] = []
    for i, im in enumerate(coco["images"]):
        where = f"images[{i}]"
        if not isinstance(im, dict) or "id" not in im or not isinstance(im.get("file_name"), str):
            raise ValueError(f"--coco: {where}: expected an object with 'id' and 'file_name'")
        key = _check_id(im["id"], where, "id")
        if key in by_id:
            raise ValueError(f"--coco: {where}: image id {im['id']!r} appears twice")
        height, width = _size(im, "height", where), _size(im, "width", where)
        if height is None or width is None:
            # One side without the other is read as neither: the size then comes from the
            # image, as for a record without both (a plan with one side would be neither
            # planned from the record nor from the image).
            height = width = None
        plan = ImagePlan(i, im["file_name"], height, width)
        by_id[key] = plan
        plans.append(plan)
    for a, ann in enumerate(coco["annotations"]):
        if not isinstance(ann, dict) or "image_id" not in ann or "bbox" not in ann:
            raise ValueError(f"--coco: annotations[{a}]: expected an object with 'image_id' and 'bbox'")
        plan = by_id.get(_check_id(ann["image_id"], _ann_where(a, ann), "image_id"))
        _is_crowd(ann, _ann_where(a, ann))  # checked for every annotation, not only those of a rank's share
        if plan is None:
            raise ValueError(f"--coco: annotations[{a}]: image_id {ann['image_id']!r} is not in 'images'")
        plan.anns.append(a)
    return [p for p in plans if p.anns]


def plan_boxes(plan: ImagePlan, coco: dict[str, Any], margin: float, min_margin: int) -> None:
    """Fills ``plan.boxes`` and ``plan.skipped`` from the image's size in the file.

    Without a width and height in the file, only the crowd regions are marked
    skipped; the rest is planned once the image is read and its size known (see
    :func:`replan_with_size`), but their boxes are checked now, so that a malformed
    one stops the run at start rather than when its image is reached.
    """
    if plan.height is not None and plan.width is not None:
        replan_with_size(plan, coco, plan.height, plan.width, margin, min_margin)
        return
    plan.skipped = {}
    for a in plan.anns:
        ann = coco["annotations"][a]
        if _is_crowd(ann, _ann_where(a, ann)):
            plan.skipped[a] = SKIP_CROWD  # as replan_with_size: a crowd region's bbox is not used
            continue
        try:
            check_bbox(ann["bbox"])
        except ValueError as err:
            raise ValueError(f"--coco: {_ann_where(a, ann)}: {err}") from None


def check_file_names(plans: list[ImagePlan], coco: dict[str, Any], allow_outside: bool) -> None:
    """Refuses a ``file_name`` that leaves the images folder (absolute, or ``..`` above it)
    unless ``allow_outside``, and one holding a NUL (no file can have that name).

    On every image with annotations, as strings only: a COCO ``file_name`` is relative
    to the images folder, and one such as ``/etc/passwd`` or ``../../x.png`` is more
    likely a crafted or broken file than a dataset laid out that way.
    """
    for p in plans:
        name = p.file_name
        where = f"images[{p.image}] (id {coco['images'][p.image]['id']!r}): file_name {_short(name, 300)}"
        if "\x00" in name:
            raise ValueError(f"--coco: {where} holds a NUL character")
        if allow_outside:
            continue
        if os.path.isabs(name):
            why = "an absolute path"
        elif os.path.normpath(name).split(os.sep)[0] == "..":
            why = "'..' leads above it"
        else:
            continue
        raise ValueError(f"--coco: {where} is outside --images ({why}); pass --allow-outside-images to read it")


def replan_with_size(
    plan: ImagePlan, coco: dict[str, Any], height: int, width: int, margin: float, min_margin: int
) -> None:
    """Fills ``plan.boxes`` and ``plan.skipped`` for an image of this size."""
    plan.height, plan.width = height, width
    plan.boxes, plan.skipped = [], {}
    for a in plan.anns:
        ann = coco["annotations"][a]
        if _is_crowd(ann, _ann_where(a, ann)):
            plan.skipped[a] = SKIP_CROWD
            continue
        try:
            res = box_crop(ann["bbox"], width, height, margin, min_margin)
        except ValueError as err:
            raise ValueError(f"--coco: {_ann_where(a, ann)}: {err}") from None
        if isinstance(res, str):
            plan.skipped[a] = res
        else:
            plan.boxes.append(BoxPlan(a, res[0], res[1]))


# A polygon vertex may lie outside the image (annotation tools clip late), but not by more
# than the image's own size: pycocotools rasterises a polygon by walking its edges at 5x
# resolution, so its time and memory grow with the coordinates' range (a vertex at 2e9
# makes it allocate until the process is killed, and NaN crashes it).
_POLYGON_REACH = 1.0
# An RLE count is a uint32 in pycocotools; its compressed form writes each value (the
# first three as they are, later ones as the difference to the count two before) in
# 5-bit groups, 6 at most for any image under 2**29 pixels (its C decoder shifts an int
# by 5 bits a group, so a seventh group would be decoded wrongly anyway).
_MAX_GROUPS = 6


def decode_rle_counts(counts: str | bytes) -> np.ndarray:
    """The run lengths of a compressed COCO RLE ``counts`` string (int64), as pycocotools' rleFrString reads them.

    Each value is a little-endian sequence of 5-bit groups, one character each
    (``chr(48 + group)``, with 0x20 added while more groups follow); the last
    group's 0x10 bit is the sign. From the fourth value on, a value is the
    difference to the count two before. Raises ValueError for a character outside
    ``'0'..'o'``, a value cut short at the end of the string, a value of more than
    6 groups, or a count outside 0 .. 2**32 - 1 (pycocotools would wrap it).
    Vectorised: the job checks every ground-truth RLE, on the thread that keeps
    pace with the device.
    """
    if isinstance(counts, str):
        if not counts.isascii():
            raise ValueError("counts string is not ASCII")
        data = counts.encode("ascii")
    else:
        data = bytes(counts)
    c = np.frombuffer(data, dtype=np.uint8).astype(np.int64) - 48
    if c.size == 0:
        return np.zeros(0, np.int64)
    bad = np.flatnonzero((c < 0) | (c > 63))
    if bad.size:
        raise ValueError(f"counts string has {chr(data[bad[0]])!r} at {bad[0]} (expected '0'..'o')")
    more = (c & 0x20) != 0
    if more[-1]:
        raise ValueError("counts string cut short in its last value")
    ends = np.flatnonzero(~more)  # the last group of each value
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > _MAX_GROUPS:
        raise ValueError(f"counts string value {int(lengths.argmax())} is longer than {_MAX_GROUPS} characters")
    k = np.arange(c.size) - np.repeat(starts, lengths)  # the group's place in its value
    x = np.add.reduceat((c & 0x1F) << (5 * k), starts)
    x -= np.where((c[ends] & 0x10) != 0, np.int64(1) << (5 * lengths), 0)  # negative values
    # counts[i] = x[i] + counts[i - 2] from i = 3 on: running sums over the odd values from
    # the second and over the even values from the third
    out = x.copy()
    out[1::2] = np.cumsum(x[1::2])
    out[2::2] = np.cumsum(x[2::2])
    bad = np.flatnonzero((out < 0) | (out >= 1 << 32))
    if bad.size:
        raise ValueError(f"counts string decodes to a count of {int(out[bad[0]])} (value {bad[0]})")
    return out


def _whole(v: Any) -> int | None:
    """v as an int when it is a JSON integer, or a float with a whole value (12.0); else None."""
    if _json_int(v):
        return int(v)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def _polygon_error(poly: Any, height: int, width: int) -> str | None:
    if not isinstance(poly, (list, tuple)):
        return f"expected each polygon as a list of numbers, got {type(poly).__name__}"
    if len(poly) < 6 or len(poly) % 2:
        return f"expected a polygon of at least 3 (x, y) points, got {len(poly)} numbers"
    for j, v in enumerate(poly):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"expected numbers in a polygon, got {type(v).__name__} {_short(v)}"
        limit = width if j % 2 == 0 else height
        if not -_POLYGON_REACH * limit <= v <= (1 + _POLYGON_REACH) * limit:  # False for NaN
            axis = "x" if j % 2 == 0 else "y"
            return (
                f"polygon {axis} = {v!r} is not a finite coordinate within one image size of a {height}x{width} image"
            )
    return None


def _short(v: Any, limit: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def segmentation_error(segmentation: Any, height: int, width: int) -> str | None:
    """Why a ``segmentation`` cannot be used as ground truth on a height x width image, or None.

    None also for no segmentation (absent, ``[]``, ``{}``). Accepted: polygons (a
    list of lists of at least 6 numbers, an even count, each coordinate finite and
    no further than one image size outside the image), or an RLE ``{"size": [h, w],
    "counts": ...}`` of the image's size whose counts (a list of integers >= 0, or a
    compressed string, see :func:`decode_rle_counts`) add up to h x w. Only Python
    arithmetic is used: this is what keeps malformed values away from pycocotools.
    """
    if segmentation is None or (isinstance(segmentation, (list, dict)) and len(segmentation) == 0):
        return None
    if isinstance(segmentation, list):
        for poly in segmentation:
            err = _polygon_error(poly, height, width)
            if err is not None:
                return err
        return None
    if not isinstance(segmentation, dict):
        kind = type(segmentation).__name__
        return f"expected polygons or an RLE {{'size', 'counts'}}, got {kind} {_short(segmentation)}"
    if "counts" not in segmentation or "size" not in segmentation:
        return f"expected an RLE with 'size' and 'counts', got keys {sorted(map(str, segmentation))}"
    size = segmentation["size"]
    hw = [_whole(v) for v in size] if isinstance(size, (list, tuple)) and len(size) == 2 else None
    if hw is None or hw != [height, width]:
        return f"RLE of size {_short(size)} on a {height}x{width} image"
    counts = segmentation["counts"]
    if isinstance(counts, (str, bytes)):
        try:
            total = int(decode_rle_counts(counts).sum())
        except ValueError as err:
            return str(err)
    elif isinstance(counts, list):
        total = 0
        for c in counts:
            v = _whole(c)
            if v is None or not 0 <= v < 1 << 32:
                return f"expected RLE counts of whole numbers >= 0, got {_short(c)}"
            total += v
    else:
        return f"expected RLE counts as a list or a string, got {type(counts).__name__}"
    if total != height * width:
        return f"RLE counts add up to {total}, not {height}x{width} = {height * width}"
    return None


def gt_rle(segmentation: Any, height: int, width: int, mask_utils: Any) -> dict[str, Any] | None:
    """A COCO ``segmentation`` as one compressed RLE (bytes counts), or None when there is none.

    Polygons (a list of flat coordinate lists) are rasterised and merged as
    pycocotools does; an RLE must be of the image's size. Raises ValueError
    (``segmentation: why``) for anything :func:`segmentation_error` refuses, before
    pycocotools sees it.
    """
    err = segmentation_error(segmentation, height, width)
    if err is not None:
        raise ValueError(f"segmentation: {err}")
    if segmentation is None or len(segmentation) == 0:
        return None
    if isinstance(segmentation, list):
        polys = [[float(v) for v in poly] for poly in segmentation]
        return mask_utils.merge(mask_utils.frPyObjects(polys, height, width))
    counts = segmentation["counts"]
    if isinstance(counts, list):
        clean = {"size": [height, width], "counts": [int(c) for c in counts]}
        return mask_utils.frPyObjects(clean, height, width)
    if isinstance(counts, str):
        return {"size": [height, width], "counts": counts.encode("ascii")}
    return {"size": [height, width], "counts": bytes(counts)}
