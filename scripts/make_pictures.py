"""Makes the README's pictures from images we may redistribute.

    .venv/bin/python scripts/make_pictures.py            # docs/images/contact_sheet.png, demo_overlay.png
    python3 scripts/make_pictures.py --speed-only        # on the GPU machine: docs/images/speed.png

The contact sheet comes from `torchgrabcut eval --sheet` on a dataset this script
draws itself (textured scenes with one object each, its ground truth and a box):
GrabCut-50 is research-only, so its pictures stay out of the repository.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from torchgrabcut.data import BUNDLED_IMAGE
from torchgrabcut.imageio import overlay, read_image, write_image

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"


def _texture(rng: np.random.Generator, h: int, w: int, base: np.ndarray, spread: float) -> np.ndarray:
    """Smooth random colour noise around ``base`` (blurred by summing shifted copies)."""
    noise = rng.normal(0, 1, (h // 8 + 2, w // 8 + 2, 3))
    big = np.kron(noise, np.ones((8, 8, 1)))[:h, :w]
    return np.clip(base + spread * big + rng.normal(0, 6, (h, w, 3)), 0, 255)


def _scene(rng: np.random.Generator, h: int = 240, w: int = 320) -> tuple[np.ndarray, np.ndarray]:
    """A textured background with one blob-shaped object; returns (BGR image, 0/255 truth)."""
    image = _texture(rng, h, w, rng.uniform(40, 200, 3), 25.0)
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = rng.uniform(0.35, 0.65) * h, rng.uniform(0.35, 0.65) * w
    angle = np.arctan2(yy - cy, xx - cx)
    radius = min(h, w) * 0.28 * (1 + 0.25 * np.sin(3 * angle + rng.uniform(0, 6)) + 0.1 * np.cos(5 * angle))
    inside = np.hypot(yy - cy, xx - cx) < radius
    obj = _texture(rng, h, w, rng.uniform(40, 220, 3), 20.0)
    image[inside] = obj[inside]
    return image.astype(np.uint8), inside.astype(np.uint8) * 255


def make_dataset(root: Path, count: int = 8, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True)
    (root / "gt").mkdir()
    rows = []
    for i in range(count):
        image, truth = _scene(rng)
        ys, xs = np.nonzero(truth)
        pad = 8
        box = (
            max(int(xs.min()) - pad, 0),
            max(int(ys.min()) - pad, 0),
            min(int(xs.max()) + pad, truth.shape[1] - 1),
            min(int(ys.max()) + pad, truth.shape[0] - 1),
        )
        write_image(root / "images" / f"scene{i}.png", image)
        write_image(root / "gt" / f"scene{i}.png", truth)
        rows.append([f"scene{i}.png", *box])
    with (root / "boxes.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["name", "x0", "y0", "x1", "y1"])
        writer.writerows(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed-only", action="store_true", help="only the speed plot (run it where the GPU is)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "torchgrabcut"]
    if args.speed_only:
        # One timed run per size after the warm-up: cv2 alone takes ~20 s at 2 MP.
        sizes = "0.1,0.3,1,2"
        bench = [*cli, "bench", "--sizes", sizes, "--repeats", "1", "--plot", str(OUT / "speed.png")]
        subprocess.run(bench, check=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        make_dataset(Path(tmp) / "scenes")
        sheet = OUT / "contact_sheet.png"
        subprocess.run(
            [*cli, "eval", str(Path(tmp) / "scenes"), "--sheet", str(sheet), "--sheet-columns", "4"], check=True
        )
    demo = Path(tempfile.mkdtemp())
    subprocess.run([*cli, "demo", "-o", str(demo)], check=True)
    image = read_image(BUNDLED_IMAGE)
    mask = read_image(demo / "mask.png", grayscale=True)
    write_image(OUT / "demo_overlay.png", overlay(image, mask))
    return 0


if __name__ == "__main__":
    sys.exit(main())
