"""bench/grabcut50_ppm.py: the PPM lists the torch-free benchmarks and the model read, crops included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from bench_scripts import BENCH, load_bench_script
from PIL import Image

SCRIPT = BENCH / "grabcut50_ppm.py"


def load_script() -> ModuleType:
    return load_bench_script("grabcut50_ppm")


def fake_dataset(root: Path) -> None:
    """Two images with boxes.csv rows (inclusive corners), as GrabCut-50 lays them out."""
    (root / "images").mkdir(parents=True)
    rng = np.random.default_rng(3)
    Image.fromarray(rng.integers(0, 256, (300, 500, 3), dtype=np.uint8)).save(root / "images" / "wide.png")
    Image.fromarray(rng.integers(0, 256, (90, 60, 3), dtype=np.uint8)).save(root / "images" / "small.png")
    # The second box touches the image's border: its crop is clipped there.
    (root / "boxes.csv").write_text("name,x0,y0,x1,y1\nwide.png,100,40,399,259\nsmall.png,0,5,40,89\n")


def read_ppm(path: Path) -> np.ndarray:
    data = path.read_bytes()
    magic, size, maxval, pixels = data.split(b"\n", 3)
    assert magic == b"P6" and maxval == b"255"
    w, h = (int(v) for v in size.split())
    return np.frombuffer(pixels, np.uint8).reshape(h, w, 3)


@pytest.mark.parametrize("longest", [96, 200, 320])
def test_crops_are_cut_as_the_dataset_job_cuts_them(longest: int) -> None:
    ppm = load_script()
    image = np.zeros((600, 1000, 3), np.uint8)
    box = (200, 100, 800, 500)  # 600 x 400, away from the borders

    class Fixed:  # a generator whose every draw is `longest`
        def integers(self, low: int, high: int) -> int:
            assert low == 96 and high == 321
            return longest

    (crop, (x0, y0, x1, y1)), *_ = ppm.crops_of(image, box, 1, Fixed())
    h, w = crop.shape[:2]
    assert max(h, w) <= longest + 3  # the box and its margins fit the drawn side (up to rounding)
    assert max(h, w) >= 0.8 * longest
    # 10% of the box's side on each side, at least 8 px.
    assert x0 >= max(8, 0.1 * (x1 - x0)) - 1 and w - x1 >= max(8, 0.1 * (x1 - x0)) - 1
    assert y0 >= max(8, 0.1 * (y1 - y0)) - 1 and h - y1 >= max(8, 0.1 * (y1 - y0)) - 1
    assert abs((x1 - x0) / (y1 - y0) - 1.5) < 0.1  # the box keeps its shape


def test_crops_written_as_a_list(tmp_path: Path) -> None:
    fake_dataset(tmp_path / "data")
    for run in ("a", "b"):
        args = ["--out", str(tmp_path / run), "--crops", "3", "--data", str(tmp_path / "data")]
        subprocess.run([sys.executable, str(SCRIPT), *args], check=True, capture_output=True)
    lines = (tmp_path / "a" / "list.txt").read_text().splitlines()
    assert len(lines) == 6
    assert (tmp_path / "b" / "list.txt").read_text().splitlines() == lines  # drawn with a fixed seed
    for line in lines:
        name, *corners = line.split()
        x0, y0, x1, y1 = (int(v) for v in corners)
        crop = read_ppm(tmp_path / "a" / name)
        h, w = crop.shape[:2]
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        assert max(h, w) <= 323
        assert read_ppm(tmp_path / "b" / name).tobytes() == crop.tobytes()
    # small.png's box starts at x = 0: no margin there, and never one past the image.
    assert all(line.split()[1] == "0" for line in lines if line.startswith("small_"))


@pytest.mark.parametrize("args", [["--crops", "-1"], ["--crops", "1001"], ["--size", "-2"]])
def test_bad_counts_are_refused(tmp_path: Path, args: list[str]) -> None:
    res = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), *args], capture_output=True, text=True)
    assert res.returncode == 2 and "expected" in res.stderr
