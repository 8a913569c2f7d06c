"""Writes GrabCut-50 as PPM images and a box list for the torch-free C++ benchmarks.

    python bench/grabcut50_ppm.py --out DIR [--size 1024 | --crops N] [--data data/grabcut50]

Each image is resized to exactly SIZE x SIZE (bicubic, Pillow; the box scaled with
it, as the GPU benchmark of issue 20 does) or, with --size 0, kept at its own size.
With --crops N, each image gives N crops the way the dataset job cuts them (the box
with a margin of 10% of its side, at least 8 px, clipped to the image), from the
image scaled so that the crop's longer side is 96..320 px (drawn with a fixed seed).
DIR/list.txt gets one line per image, "name.ppm x0 y0 x1 y1" with a half-open box,
which tests/common/ppm_image.h reads. The PPMs hold the image's channels in OpenCV's
order (BGR), the order the library's callers pass. The dataset's licence is for
research only: write DIR outside the package (a temporary folder).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image


def scale_box(box: tuple[int, int, int, int], sy: float, sx: float, h: int, w: int) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    return int(x0 * sx), int(y0 * sy), min(w, int(np.ceil(x1 * sx))), min(h, int(np.ceil(y1 * sy)))


def load_items(root: Path) -> list[tuple[str, np.ndarray, tuple[int, int, int, int]]]:
    """(name, BGR image, half-open box) of each row of boxes.csv (inclusive corners there).

    Reads the files with Pillow alone, so that it runs where the extension is not built.
    """
    items = []
    with (root / "boxes.csv").open(newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            with Image.open(root / "images" / row["name"]) as im:
                image = np.asarray(im.convert("RGB"))[:, :, ::-1]
            h, w = image.shape[:2]
            x0, y0, x1, y1 = (int(row[c]) for c in ("x0", "y0", "x1", "y1"))
            if not (0 <= x0 <= x1 < w and 0 <= y0 <= y1 < h):
                raise ValueError(f"boxes.csv: the box of {row['name']} does not fit its {h}x{w} image")
            items.append((row["name"], image, (x0, y0, x1 + 1, y1 + 1)))
    return items


def write_ppm(path: Path, image: np.ndarray) -> None:
    h, w = image.shape[:2]
    with path.open("wb") as f:
        f.write(f"P6\n{w} {h}\n255\n".encode("ascii"))
        f.write(np.ascontiguousarray(image, dtype=np.uint8).tobytes())


def dataset_job_box_crop() -> Callable[..., Any]:
    """The dataset job's own crop plan, torchgrabcut.dataset.plan.box_crop.

    Loaded from its file: the plan needs only numpy, while importing the package would
    load torch and the compiled extension, which the torch-free benchmarks do without.
    """
    name = "torchgrabcut_dataset_plan"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "python" / "torchgrabcut" / "dataset" / "plan.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules[name].box_crop


def crops_of(
    image: np.ndarray, box: tuple[int, int, int, int], n: int, rng: np.random.Generator
) -> list[tuple[np.ndarray, tuple[int, int, int, int]]]:
    """N (crop, half-open box in the crop) of the image around its box, as the dataset job's plan cuts them."""
    box_crop = dataset_job_box_crop()
    h, w = image.shape[:2]
    rgb = Image.fromarray(image[:, :, ::-1])
    side = max(box[2] - box[0], box[3] - box[1]) * 1.2  # the box and its margins
    out = []
    for _ in range(n):
        longest = int(rng.integers(96, 321))
        scale = min(1.0, longest / side)
        sh, sw = max(1, round(h * scale)), max(1, round(w * scale))
        scaled = np.asarray(rgb.resize((sw, sh), Image.BICUBIC))[:, :, ::-1]
        x0, y0, x1, y1 = scale_box(box, sh / h, sw / w, sh, sw)
        plan = box_crop([x0, y0, x1 - x0, y1 - y0], sw, sh, 0.1, 8)
        if isinstance(plan, str):
            raise ValueError(f"box {box} scaled to {(x0, y0, x1, y1)} in {sw}x{sh}: {plan}")
        (cx0, cy0, cx1, cy1), in_crop = plan
        out.append((np.ascontiguousarray(scaled[cy0:cy1, cx0:cx1]), in_crop))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--size", type=int, default=1024, help="side of the square images; 0 keeps each size")
    parser.add_argument("--crops", type=int, default=0, help="crops per image, as the dataset job cuts them (0: none)")
    parser.add_argument("--data", default=os.environ.get("TORCHGRABCUT_GRABCUT50", "data/grabcut50"))
    args = parser.parse_args()
    if args.size < 0 or args.size > 8192:
        parser.error("--size: expected 0..8192")
    if args.crops < 0 or args.crops > 1000:
        parser.error("--crops: expected 0..1000")
    args.out.mkdir(parents=True, exist_ok=True)
    lines = []
    rng = np.random.default_rng(20)
    for name_in, image, box in load_items(Path(args.data)):
        if args.crops > 0:
            for i, (crop, cbox) in enumerate(crops_of(image, box, args.crops, rng)):
                name = f"{Path(name_in).stem}_{i}.ppm"
                write_ppm(args.out / name, crop)
                lines.append(f"{name} {cbox[0]} {cbox[1]} {cbox[2]} {cbox[3]}\n")
            continue
        h, w = image.shape[:2]
        if args.size > 0:
            resized = Image.fromarray(image[:, :, ::-1]).resize((args.size, args.size), Image.BICUBIC)
            image = np.asarray(resized)[:, :, ::-1]
            box = scale_box(box, args.size / h, args.size / w, args.size, args.size)
        name = Path(name_in).stem + ".ppm"
        write_ppm(args.out / name, image)
        lines.append(f"{name} {box[0]} {box[1]} {box[2]} {box[3]}\n")
    (args.out / "list.txt").write_text("".join(lines))
    print(f"{len(lines)} images written to {args.out}")


if __name__ == "__main__":
    main()
