"""Helpers for test_coco.py: small COCO sets on disk and independent ways to read them back."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from pycocotools import mask as mask_utils

from torchgrabcut.coco.synthetic import make_synthetic_coco

REPO = Path(__file__).resolve().parents[2]


def clean_coco(root: Path) -> Path:
    """Six 240x320 images with 2..5 shapes apart from each other (polygon ground truth), plus edge cases.

    Added to the generated annotations: a crowd region, a 1-pixel-wide box, a
    box outside the image, an annotation without a segmentation, an image whose
    only annotation is a crowd region (and whose file does not exist: it must
    not be read), and an image without annotations.
    """
    path = make_synthetic_coco(
        root, 6, height=240, width=320, boxes=(2, 5), box_px=(30, 110), overlap=False, seed=7, image_format="png"
    )
    coco = json.loads(path.read_text())
    anns = coco["annotations"]
    extra = [
        {"id": 901, "image_id": 1, "category_id": 1, "iscrowd": 1, "bbox": [10.0, 10.0, 50.0, 40.0], "area": 1.0},
        {"id": 902, "image_id": 2, "category_id": 1, "iscrowd": 0, "bbox": [30.0, 30.0, 1.0, 40.0], "area": 1.0},
        {"id": 903, "image_id": 2, "category_id": 1, "iscrowd": 0, "bbox": [400.0, 10.0, 30.0, 30.0], "area": 1.0},
        {"id": 904, "image_id": 3, "category_id": 1, "iscrowd": 0, "bbox": [5.5, 6.25, 40.0, 30.5], "area": 1.0},
        {"id": 905, "image_id": 100, "category_id": 1, "iscrowd": 1, "bbox": [1.0, 1.0, 5.0, 5.0], "area": 1.0},
    ]
    # Insert them among the others, not at the end, so that the output order is really checked.
    for k, ann in enumerate(extra):
        anns.insert(2 * k + 1, ann)
    coco["images"].append({"id": 100, "file_name": "not_there.png", "height": 240, "width": 320})
    coco["images"].append({"id": 101, "file_name": "no_annotations.png", "height": 240, "width": 320})
    path.write_text(json.dumps(coco))
    return path


def grabcut50_coco(src: Path, names: list[str], root: Path) -> Path:
    """GrabCut-50 images as a COCO file: boxes from boxes.csv, ground truth = gt pixels of 255 as RLE.

    The images are linked, not copied.
    """
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "gt").mkdir(exist_ok=True)
    images, anns = [], []
    with (src / "boxes.csv").open(newline="") as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    for i, name in enumerate(names):
        row = rows[name]
        os.symlink(src / "images" / name, root / "images" / name)
        os.symlink(src / "gt" / (Path(name).stem + ".png"), root / "gt" / (Path(name).stem + ".png"))
        gt = np.asarray(Image.open(src / "gt" / (Path(name).stem + ".png")).convert("L"))
        h, w = gt.shape
        rle = mask_utils.encode(np.asfortranarray((gt == 255).astype(np.uint8)))
        x0, y0, x1, y1 = (int(row[k]) for k in ("x0", "y0", "x1", "y1"))  # inclusive
        images.append({"id": i, "file_name": name, "height": h, "width": w})
        anns.append(
            {
                "id": i,
                "image_id": i,
                "category_id": 1,
                "iscrowd": 0,
                "bbox": [float(x0), float(y0), float(x1 - x0 + 1), float(y1 - y0 + 1)],
                "area": float(mask_utils.area(rle)),
                "segmentation": {"size": [h, w], "counts": rle["counts"].decode()},
            }
        )
    with (root / "boxes.csv").open("w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["name", "x0", "y0", "x1", "y1"])
        for name in names:
            wr.writerow([name, *(rows[name][k] for k in ("x0", "y0", "x1", "y1"))])
    path = root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "o"}]}))
    return path


def decode_segmentation(seg: Any, h: int, w: int) -> np.ndarray:
    """Any COCO segmentation as an (h, w) bool mask, the way pycocotools' COCO.annToMask reads it."""
    if isinstance(seg, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    elif isinstance(seg["counts"], list):
        rle = mask_utils.frPyObjects(seg, h, w)
    else:
        rle = {"size": seg["size"], "counts": seg["counts"].encode()}
    return mask_utils.decode(rle).astype(bool)


def numpy_iou(a: np.ndarray, b: np.ndarray) -> float:
    union = int((a | b).sum())
    return float((a & b).sum() / union) if union else 1.0


def run_module(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300) -> Any:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env
    )


def dataset_args(coco: Path, images: Path, out: Path, *extra: str) -> list[str]:
    return ["--coco", str(coco), "--images", str(images), "-o", str(out), "--quiet", *extra]
