"""The command line, end to end in a subprocess: outputs written, errors in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from torchgrabcut.imageio import read_image, write_image


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchgrabcut", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_demo_writes_mask_and_overlay(tmp_path: Path) -> None:
    res = run_cli("demo", "-o", str(tmp_path / "out"), "--device", "cpu", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    mask = read_image(tmp_path / "out" / "mask.png", grayscale=True)
    assert mask.shape == (512, 512)
    fg = (mask & 1).astype(bool)
    assert 0.15 < fg.mean() < 0.6  # the astronaut, not everything or nothing
    assert fg[320:420, 60:130].mean() > 0.9  # her suit
    assert not fg[100:200, 420:500].any()  # the background right of her
    assert (tmp_path / "out" / "overlay.png").is_file()
    assert "mask.png" in res.stdout


def test_segment_with_box_and_with_mask(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    img = np.full((40, 50, 3), 30, np.uint8) + rng.integers(0, 10, (40, 50, 3)).astype(np.uint8)
    img[10:30, 15:35] = (40, 200, 220)
    write_image(tmp_path / "img.png", img)
    res = run_cli("segment", "img.png", "--box", "10,5,40,35", "-o", "m.png", "--device", "cpu", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    mask = read_image(tmp_path / "m.png", grayscale=True)
    assert (mask[12:28, 17:33] & 1).all() and not (mask[:4] & 1).any()
    trimap = np.zeros((40, 50), np.uint8)
    trimap[5:35, 10:40] = 3
    write_image(tmp_path / "trimap.png", trimap)
    res = run_cli(
        "segment",
        "img.png",
        "--mask",
        "trimap.png",
        "-o",
        "m2.png",
        "--overlay",
        "ov.png",
        "--device",
        "cpu",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert np.array_equal(read_image(tmp_path / "m2.png", grayscale=True), mask)
    assert read_image(tmp_path / "ov.png").shape == (40, 50, 3)


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "not_an_image.png").write_text("hello")
    cases = [
        ("segment", "missing.png", "--box", "1,1,5,5"),
        ("segment", "not_an_image.png", "--box", "1,1,5,5"),
    ]
    for args in cases:
        res = run_cli(*args, cwd=tmp_path)
        assert res.returncode == 2
        assert "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    write_image(tmp_path / "ok.png", np.zeros((10, 10, 3), np.uint8))
    res = run_cli("segment", "ok.png", "--box", "1,1,50,5", "--device", "cpu", cwd=tmp_path)
    assert res.returncode == 2 and "box: expected" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("segment", "ok.png", "--box", "1,x,5", cwd=tmp_path)
    assert res.returncode == 2 and "x0,y0,x1,y1" in res.stderr
