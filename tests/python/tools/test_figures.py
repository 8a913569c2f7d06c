"""The contact sheet and the speed plot: drawn from the masks given, and written by the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import write_tiny_dataset
from torchgrabcut.imageio import read_image
from torchgrabcut.tools.figures import OUTLINE_BGR, TRUTH_BGR, SheetTile, contact_sheet, outline, speed_plot
from torchgrabcut.tools.speed import BenchRow


def test_outline_is_the_inner_boundary() -> None:
    fg = np.zeros((7, 8), bool)
    fg[2:5, 2:6] = True
    edge = outline(fg)
    expected = fg.copy()
    expected[3, 3:5] = False  # the only pixels with all four neighbours inside
    assert np.array_equal(edge, expected)
    full = np.ones((3, 3), bool)  # the image border counts as outside
    assert outline(full).sum() == 8


def test_contact_sheet_draws_each_tile_where_its_mask_is() -> None:
    img = np.full((60, 80, 3), 200, np.uint8)
    left = np.zeros((60, 80), np.uint8)
    left[10:50, 5:30] = 3  # probable foreground counts as foreground
    right = np.zeros((60, 80), bool)
    right[20:40, 50:75] = True
    sheet = contact_sheet(
        [SheetTile(img, left, "a"), SheetTile(img, right, "b", truth=right)], tile_width=80, tile_height=60
    )
    assert sheet.shape == (4 + 60 + 16 + 4, 4 + 2 * (80 + 4), 3)
    first = sheet[4 : 4 + 60, 4 : 4 + 80]
    second = sheet[4 : 4 + 60, 88 : 88 + 80]
    green = np.all(first == OUTLINE_BGR, axis=2)
    assert np.array_equal(green, outline(left.astype(bool)))
    assert (first[30, 15] == 200).all()  # foreground keeps its colour
    assert (first[30, 60] < 100).all()  # background is dimmed
    assert np.all(second[20, 60] == OUTLINE_BGR)  # our outline is drawn over the truth's
    assert not np.all(second == TRUTH_BGR, axis=2).any()  # ... which coincides with it everywhere here
    with pytest.raises(ValueError, match="no images"):
        contact_sheet([])
    with pytest.raises(ValueError, match="does not match"):
        contact_sheet([SheetTile(img, left[:10], "bad")])


def test_speed_plot_writes_a_png(tmp_path: Path) -> None:
    rows = [BenchRow(480, 640, 1, 900.0, 300.0, 3.0, 0.98), BenchRow(1000, 1000, 1, 3000.0, 900.0, None, None)]
    speed_plot(rows, tmp_path / "speed.png")
    with Image.open(tmp_path / "speed.png") as im:
        assert im.size == (600, 400)
        # Something besides white was drawn.
        assert len(set(np.asarray(im.convert("L")).ravel().tolist())) > 10


def test_cli_eval_sheet_and_bench_plot(tmp_path: Path) -> None:
    write_tiny_dataset(tmp_path / "ds")
    cmd = [sys.executable, "-m", "torchgrabcut", "eval", str(tmp_path / "ds"), "--device", "cpu"]
    res = subprocess.run([*cmd, "--sheet", str(tmp_path / "sheet.png")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "contact sheet:" in res.stdout
    sheet = read_image(tmp_path / "sheet.png")
    assert sheet.shape == (4 + 150 + 16 + 4, 4 + 2 * 204, 3)
    assert np.all(sheet == OUTLINE_BGR, axis=2).sum() > 100  # both objects outlined
    res = subprocess.run(
        [sys.executable, "-m", "torchgrabcut", "bench", "--sizes", "0.01,0.03", "--repeats", "1", "--no-gpu"]
        + ["--plot", str(tmp_path / "speed.png")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "speed.png").stat().st_size > 1000
