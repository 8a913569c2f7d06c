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
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "SKIP_CROWD",
    "SKIP_NO_BACKGROUND",
    "SKIP_OUTSIDE",
    "SKIP_SMALL",
    "BoxPlan",
    "ImagePlan",
    "box_crop",
    "gt_rle",
    "index_images",
    "load_coco",
    "plan_boxes",
    "require_dataset_deps",
]

SKIP_CROWD = "iscrowd"
SKIP_SMALL = "box under 2 px"
SKIP_OUTSIDE = "box outside the image"
SKIP_NO_BACKGROUND = "box fills a crop under 3 px"

_EPS = 1e-6


def require_dataset_deps() -> tuple[Any, Any]:
    """(pycocotools.mask, tqdm.tqdm), or a RuntimeError that says how to install them."""
    try:
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
    return coco, hashlib.sha256(data).hexdigest()


def _size(image: dict[str, Any], key: str, where: str) -> int | None:
    v = image.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v <= 0:
        raise ValueError(f"--coco: {where}: expected a positive integer {key}, got {v!r}")
    return int(v)


def box_crop(
    bbox: Any, width: int, height: int, margin: float, min_margin: int
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]] | str:
    """(crop in the image, box in the crop), both half-open, or the reason to skip the box.

    Raises ValueError when ``bbox`` is not four finite numbers with w, h >= 0.
    """
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        raise ValueError(f"expected bbox [x, y, w, h], got {bbox!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in bbox):
        raise ValueError(f"expected bbox of four finite numbers, got {bbox!r}")
    x, y, w, h = (float(v) for v in bbox)
    if w < 0 or h < 0:
        raise ValueError(f"expected bbox with w >= 0 and h >= 0, got {bbox!r}")
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
    by_id: dict[Any, ImagePlan] = {}
    plans: list[ImagePlan] = []
    for i, im in enumerate(coco["images"]):
        where = f"images[{i}]"
        if not isinstance(im, dict) or "id" not in im or not isinstance(im.get("file_name"), str):
            raise ValueError(f"--coco: {where}: expected an object with 'id' and 'file_name'")
        key = _hashable(im["id"])
        if key in by_id:
            raise ValueError(f"--coco: {where}: image id {im['id']!r} appears twice")
        plan = ImagePlan(i, im["file_name"], _size(im, "height", where), _size(im, "width", where))
        by_id[key] = plan
        plans.append(plan)
    for a, ann in enumerate(coco["annotations"]):
        if not isinstance(ann, dict) or "image_id" not in ann or "bbox" not in ann:
            raise ValueError(f"--coco: annotations[{a}]: expected an object with 'image_id' and 'bbox'")
        plan = by_id.get(_hashable(ann["image_id"]))
        if plan is None:
            raise ValueError(f"--coco: annotations[{a}]: image_id {ann['image_id']!r} is not in 'images'")
        plan.anns.append(a)
    return [p for p in plans if p.anns]


def plan_boxes(plan: ImagePlan, coco: dict[str, Any], margin: float, min_margin: int) -> None:
    """Fills ``plan.boxes`` and ``plan.skipped`` from the image's size in the file.

    Without a width and height in the file, only the crowd regions are marked
    skipped; the rest is planned once the image is read and its size known (see
    :func:`replan_with_size`).
    """
    if plan.height is not None and plan.width is not None:
        replan_with_size(plan, coco, plan.height, plan.width, margin, min_margin)
    else:
        plan.skipped = {a: SKIP_CROWD for a in plan.anns if coco["annotations"][a].get("iscrowd", 0)}


def replan_with_size(
    plan: ImagePlan, coco: dict[str, Any], height: int, width: int, margin: float, min_margin: int
) -> None:
    """Fills ``plan.boxes`` and ``plan.skipped`` for an image of this size."""
    plan.height, plan.width = height, width
    plan.boxes, plan.skipped = [], {}
    for a in plan.anns:
        ann = coco["annotations"][a]
        if ann.get("iscrowd", 0):
            plan.skipped[a] = SKIP_CROWD
            continue
        try:
            res = box_crop(ann["bbox"], width, height, margin, min_margin)
        except ValueError as err:
            raise ValueError(f"--coco: annotations[{a}] (id {ann.get('id')!r}): {err}") from None
        if isinstance(res, str):
            plan.skipped[a] = res
        else:
            plan.boxes.append(BoxPlan(a, res[0], res[1]))


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v


def gt_rle(segmentation: Any, height: int, width: int, mask_utils: Any) -> dict[str, Any] | None:
    """A COCO ``segmentation`` as one compressed RLE (bytes counts), or None when there is none.

    Polygons (a list of flat coordinate lists) are rasterised and merged as
    pycocotools does; an RLE must be of the image's size.
    """
    if segmentation is None or (isinstance(segmentation, (list, dict)) and len(segmentation) == 0):
        return None
    if isinstance(segmentation, list):
        polys = []
        for poly in segmentation:
            if (
                not isinstance(poly, list)
                or len(poly) < 6
                or len(poly) % 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in poly)
            ):
                raise ValueError("segmentation: expected polygons of at least 3 (x, y) points")
            polys.append([float(v) for v in poly])
        return mask_utils.merge(mask_utils.frPyObjects(polys, height, width))
    if isinstance(segmentation, dict) and "counts" in segmentation and "size" in segmentation:
        size = segmentation["size"]
        if not isinstance(size, list) or [int(v) for v in size] != [height, width]:
            raise ValueError(f"segmentation: RLE of size {size!r} on a {height}x{width} image")
        counts = segmentation["counts"]
        if isinstance(counts, list):
            return mask_utils.frPyObjects(segmentation, height, width)
        if isinstance(counts, str):
            return {"size": [height, width], "counts": counts.encode("ascii")}
        if isinstance(counts, bytes):
            return {"size": [height, width], "counts": counts}
    raise ValueError("segmentation: expected polygons or an RLE {'size', 'counts'}")
