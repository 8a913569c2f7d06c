"""A COCO annotation file over real photos with ground truth, boxes as a detector gives them.

The dataset job's benchmark on generated images (tests/python/synthetic_coco.py) has flat
colours and sharp edges: its GrabCut cuts are easy. Issue 33's dataset goal is for real
photos, so this writes ``instances.json`` over a folder laid out as GrabCut-50 is
(``images/NAME.jpg|bmp``, ``gt/NAME.png`` with 255 = object, 128 = unknown band, 0 =
background): each photo gets ``boxes_per_photo`` annotations of its object, every one
with the ground truth's box jittered as a detector's boxes are (each side moved by a
normal amount, sigma ``jitter`` x the box's side, clipped to the image, at least 8 px a
side), and the ground truth as an RLE segmentation, so the job reports the IoU. The
photos are referenced where they are, never copied (GrabCut-50's licence is
research-only: it stays in ../shared).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def _photos(photos: Path) -> list[tuple[Path, Path]]:
    """(image, ground truth) pairs of the folder, sorted by name."""
    pairs = []
    for image in sorted((photos / "images").iterdir()):
        gt = photos / "gt" / (image.stem + ".png")
        if image.suffix.lower() in _IMAGE_SUFFIXES and gt.is_file():
            pairs.append((image, gt))
    if not pairs:
        raise FileNotFoundError(f"{photos}: no images/NAME.* with a gt/NAME.png")
    return pairs


def _jittered(
    rng: np.random.Generator, box: tuple[int, int, int, int], width: int, height: int, jitter: float
) -> list[float]:
    """The box with each side moved by N(0, jitter x its side), clipped, >= 8 px a side (x, y, w, h)."""
    x0, y0, x1, y1 = box
    bw, bh = x1 - x0, y1 - y0
    dx0, dx1 = rng.normal(0.0, jitter * bw, 2)
    dy0, dy1 = rng.normal(0.0, jitter * bh, 2)
    nx0 = float(np.clip(x0 + dx0, 0, width - 8))
    ny0 = float(np.clip(y0 + dy0, 0, height - 8))
    nx1 = float(np.clip(x1 + dx1, nx0 + 8, width))
    ny1 = float(np.clip(y1 + dy1, ny0 + 8, height))
    return [round(nx0, 2), round(ny0, 2), round(nx1 - nx0, 2), round(ny1 - ny0, 2)]


def make_photo_coco(
    photos: str | Path, out: str | Path, *, boxes_per_photo: int = 40, jitter: float = 0.08, seed: int = 0
) -> Path:
    """Writes ``out/instances.json`` over ``photos/images`` (see the module's docstring); returns its path.

    The job's image folder is ``photos/images``.
    """
    from pycocotools import mask as mask_utils

    if boxes_per_photo < 1:
        raise ValueError(f"boxes_per_photo: expected at least 1, got {boxes_per_photo}")
    if not np.isfinite(jitter) or not 0.0 <= jitter <= 1.0:
        raise ValueError(f"jitter: expected a fraction of the box in [0, 1], got {jitter}")
    photos, out = Path(photos), Path(out)
    rng = np.random.default_rng(seed)
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for i, (image, gt_path) in enumerate(_photos(photos)):
        gt = np.asarray(Image.open(gt_path).convert("L"))
        with Image.open(image) as im:
            width, height = im.size
        if gt.shape != (height, width):
            raise ValueError(f"{gt_path}: {gt.shape[1]}x{gt.shape[0]}, its image {width}x{height}")
        obj = gt == 255
        if not obj.any():
            continue
        ys, xs = np.nonzero(obj)
        box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
        rle = mask_utils.encode(np.asfortranarray(obj.astype(np.uint8)))
        segmentation = {"size": [height, width], "counts": rle["counts"].decode()}
        images.append({"id": i + 1, "file_name": image.name, "height": height, "width": width})
        for _ in range(boxes_per_photo):
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": 1,
                    "iscrowd": 0,
                    "bbox": _jittered(rng, box, width, height, jitter),
                    "area": float(obj.sum()),
                    "segmentation": segmentation,
                }
            )
    coco = {
        "info": {"description": f"detector-like boxes over the photos of {photos}", "seed": seed},
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 1, "name": "object", "supercategory": "object"}],
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "instances.json"
    path.write_text(json.dumps(coco))
    return path
