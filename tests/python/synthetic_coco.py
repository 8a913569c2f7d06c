"""A generated COCO-like set (no download): for the tests and for the dataset benchmarks in bench/.

Each image is a smooth colour field with noise and a few clutter bars; on it,
objects are filled polygons (5 to 12 vertices around the centre of a box of the
requested size range) in a colour at least ``contrast`` away (RGB distance)
from the background under them, with their own noise. Later objects cover
earlier ones. The ground truth is what is visible: an object that nothing covers
gets its polygon as ``segmentation``; a covered one gets the compressed RLE of
its visible pixels. ``bbox`` is the box around the visible pixels. The same
arguments give the same files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

__all__ = ["make_synthetic_coco", "repeat_coco"]


def _background(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    coarse = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC), dtype=np.int16)
    img = field + rng.integers(-14, 15, (height, width, 3), dtype=np.int16)
    for _ in range(int(rng.integers(2, 6))):  # clutter: bars of another colour
        y0, x0 = int(rng.integers(0, height)), int(rng.integers(0, width))
        h, w = (int(rng.integers(4, 30)), int(rng.integers(30, width // 2)))
        if rng.random() < 0.5:
            h, w = w, h
        img[y0 : y0 + h, x0 : x0 + w] = rng.integers(0, 256, 3)
    return img


def _polygon(rng: np.random.Generator, box: tuple[float, float, float, float]) -> list[float]:
    x0, y0, x1, y1 = box
    cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
    n = int(rng.integers(5, 13))
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
    radii = rng.uniform(0.65, 1.0, n)
    xs = np.clip(cx + rx * radii * np.cos(angles), x0, x1)
    ys = np.clip(cy + ry * radii * np.sin(angles), y0, y1)
    return [round(float(v), 2) for xy in zip(xs, ys) for v in xy]


def make_synthetic_coco(
    root: str | Path,
    n_images: int,
    *,
    height: int = 480,
    width: int = 640,
    boxes: tuple[int, int] = (5, 15),
    box_px: tuple[int, int] = (50, 400),
    overlap: bool = True,
    contrast: float = 90.0,
    seed: int = 0,
    image_format: str = "jpg",
) -> Path:
    """Writes ``root/images/*`` and ``root/instances.json``; returns the JSON's path.

    ``boxes``: (min, max) objects per image; ``box_px``: (min, max) side of an
    object's box in pixels (clipped to the image); ``overlap=False`` places the
    objects apart (with a gap) so that every ground truth is a whole polygon.
    """
    from pycocotools import mask as mask_utils

    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for i in range(n_images):
        img = _background(rng, height, width)
        labels = np.zeros((height, width), np.int32)
        placed: list[tuple[float, float, float, float]] = []
        polys: list[list[float]] = []
        for _ in range(int(rng.integers(boxes[0], boxes[1] + 1))):
            for _try in range(50):
                w = float(rng.uniform(box_px[0], min(box_px[1], width - 2)))
                h = float(rng.uniform(box_px[0], min(box_px[1], height - 2)))
                x0, y0 = float(rng.uniform(0, width - w)), float(rng.uniform(0, height - h))
                box = (x0, y0, x0 + w, y0 + h)
                gap = 12
                if overlap or all(
                    box[2] + gap < b[0] or b[2] + gap < box[0] or box[3] + gap < b[1] or b[3] + gap < box[1]
                    for b in placed
                ):
                    break
            else:
                continue  # no room left for an object apart from the others
            poly = _polygon(rng, box)
            canvas = Image.new("L", (width, height), 0)
            ImageDraw.Draw(canvas).polygon(poly, fill=1)
            inside = np.asarray(canvas, dtype=bool)
            under = img[inside].mean(0) if inside.any() else np.zeros(3)
            for _try in range(30):
                colour = rng.integers(0, 256, 3)
                if np.linalg.norm(colour - under) >= contrast:
                    break
            texture = rng.integers(-12, 13, (int(inside.sum()), 3), dtype=np.int16)
            img[inside] = colour + texture
            labels[inside] = len(polys) + 1
            placed.append(box)
            polys.append(poly)
        name = f"{i:06d}.{image_format}"
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(root / "images" / name, quality=90)
        images.append({"id": i + 1, "file_name": name, "height": height, "width": width})
        for k, poly in enumerate(polys):
            visible = labels == k + 1
            if visible.sum() < 16:
                continue  # covered: nothing left to annotate
            rle = mask_utils.encode(np.asfortranarray(visible.astype(np.uint8)))
            canvas = Image.new("L", (width, height), 0)
            ImageDraw.Draw(canvas).polygon(poly, fill=1)
            whole = bool((np.asarray(canvas, dtype=bool) == visible).all())
            segmentation: Any = [poly] if whole else {"size": [height, width], "counts": rle["counts"].decode()}
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": i + 1,
                    "category_id": 1,
                    "iscrowd": 0,
                    "bbox": [float(v) for v in mask_utils.toBbox(rle)],
                    "area": float(mask_utils.area(rle)),
                    "segmentation": segmentation,
                }
            )
    coco = {
        "info": {"description": "torchgrabcut synthetic COCO-like set", "seed": seed},
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 1, "name": "shape", "supercategory": "shape"}],
    }
    path = root / "instances.json"
    path.write_text(json.dumps(coco))
    return path


def repeat_coco(path: str | Path, out_path: str | Path, times: int) -> Path:
    """Writes an annotation file that lists every image of ``path`` ``times`` times.

    Copy k of image i gets id ``k * (max id) + i`` and keeps its file name, and its
    annotations are renumbered the same way, so a job reads the same files again:
    a set large enough to keep several GPUs busy for a while, without generating
    (or storing) more images. Returns ``out_path``.
    """
    if times < 1:
        raise ValueError(f"times: expected at least 1, got {times}")
    coco = json.loads(Path(path).read_text())
    step_img = max((im["id"] for im in coco["images"]), default=0)
    step_ann = max((a["id"] for a in coco["annotations"]), default=0)
    images, annotations = [], []
    for k in range(times):
        images += [{**im, "id": k * step_img + im["id"]} for im in coco["images"]]
        annotations += [
            {**a, "id": k * step_ann + a["id"], "image_id": k * step_img + a["image_id"]} for a in coco["annotations"]
        ]
    out = Path(out_path)
    out.write_text(json.dumps({**coco, "images": images, "annotations": annotations}))
    return out
