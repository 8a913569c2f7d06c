"""Shared fixtures: the GrabCut-50 dataset (read from ../shared, never copied into the package)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from torchgrabcut.imageio import write_image

ROOT = Path(__file__).resolve().parents[2]


def grabcut50_dir() -> Path | None:
    candidates = [
        os.environ.get("TORCHGRABCUT_GRABCUT50", ""),
        ROOT / "data" / "grabcut50",
        ROOT.parent / "shared" / "data" / "grabcut50",
    ]
    for c in candidates:
        if c and (Path(c) / "boxes.csv").is_file():
            return Path(c)
    return None


@pytest.fixture(scope="session")
def grabcut50() -> Path:
    d = grabcut50_dir()
    if d is None:
        pytest.skip("GrabCut-50 not found (../shared/data/grabcut50)")
    return d


@pytest.fixture(scope="session")
def dataset_items(grabcut50: Path) -> list:
    from torchgrabcut.tools.evaluate import load_dataset

    return load_dataset(grabcut50)


def has_cuda() -> bool:
    return torch.cuda.is_available()


def random_image(rng: np.random.Generator, h: int, w: int, blobs: int = 4) -> np.ndarray:
    """A smooth colour field with noise: real-image-like statistics, any size."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    for _ in range(blobs):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(0.2, 0.6) * max(h, w)
        weight = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
        img += weight[..., None] * rng.uniform(0, 255, 3)
    img = img / max(img.max(), 1e-9) * 200 + rng.normal(0, 12, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def object_image(rng: np.random.Generator, h: int, w: int, box: tuple[int, int, int, int]) -> np.ndarray:
    """random_image with a distinctly coloured ellipse filling most of box (x0, y0, x1, y1)."""
    img = random_image(rng, h, w)
    x0, y0, x1, y1 = box
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx, ry, rx = (y0 + y1) / 2, (x0 + x1) / 2, 0.4 * (y1 - y0), 0.4 * (x1 - x0)
    inside = ((yy - cy) / max(ry, 0.5)) ** 2 + ((xx - cx) / max(rx, 0.5)) ** 2 <= 1
    colour = rng.uniform(0, 255, 3)
    noise = rng.normal(0, 10, (h, w, 3))
    img[inside] = np.clip(colour + noise[inside], 0, 255).astype(np.uint8)
    return img


# The server tests' images (tests/python/server): an object inside SERVER_BOX, and a second
# image of another size.
SERVER_BOX = (12, 8, 52, 40)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return object_image(np.random.default_rng(7), 48, 64, SERVER_BOX)


@pytest.fixture(scope="module")
def image2() -> np.ndarray:
    return object_image(np.random.default_rng(8), 40, 56, (5, 5, 40, 35))


def requires_cuda(fn):  # type: ignore[no-untyped-def]
    """Skip without a GPU; with one, the CUDA kernels must be there (missing ones fail)."""
    return pytest.mark.cuda(pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")(fn))


def write_tiny_dataset(root: Path) -> None:
    """Two synthetic images with a bright object, its ground truth and an inclusive box."""
    (root / "images").mkdir(parents=True)
    (root / "gt").mkdir()
    rng = np.random.default_rng(5)
    rows = []
    for i, (y0, x0) in enumerate([(12, 15), (20, 30)]):
        img = rng.integers(20, 60, (64, 80, 3)).astype(np.uint8)
        img[y0 : y0 + 25, x0 : x0 + 30] = (40, 210, 230)
        gt = np.zeros((64, 80), np.uint8)
        gt[y0 : y0 + 25, x0 : x0 + 30] = 255
        write_image(root / "images" / f"im{i}.png", img)
        write_image(root / "gt" / f"im{i}.png", gt)
        rows.append([f"im{i}.png", x0 - 5, y0 - 5, x0 + 34, y0 + 29])
    with (root / "boxes.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "x0", "y0", "x1", "y1"])
        w.writerows(rows)


def ctrl_c_as_in_a_terminal() -> None:
    """preexec_fn for a child that a test interrupts: SIGINT back to its default action.

    A process started in the background of a non-interactive shell (`make test &`, a CI
    runner, nohup) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler in its children: Ctrl-C tests would fail there for a reason that is not the
    code's. A user pressing Ctrl-C in a terminal has the default action; so does the child.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_interrupted_script(script: str, *args: str) -> None:
    """Runs a Python script that interrupts itself (a Ctrl-C test) in a child as a terminal would;
    passes when it exits 0 with its last line "ok"."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok")
