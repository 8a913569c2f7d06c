"""`torchgrabcut eval`: a whole-image box on an image too small for a border is named by file and line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from torchgrabcut.cli import main
from torchgrabcut.imageio import write_image


def run_main(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """main(argv) in this process: (exit status, stdout, stderr)."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return status, out.out, out.err


def assert_one_line(status: int, err: str, command: str, *needles: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"torchgrabcut {command}: error: "), err
    for needle in needles:
        assert needle in err, err


# -- eval: a whole-image box on an image too small for a border -------------------------------------


def test_eval_names_the_file_and_line_of_a_whole_image_box_on_a_tiny_image(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    ds = tmp_path / "ds"
    (ds / "images").mkdir(parents=True)
    (ds / "gt").mkdir()
    rng = np.random.default_rng(0)
    rows = [["name", "x0", "y0", "x1", "y1"]]
    for name, size, box in [("big.png", 30, [5, 5, 20, 20]), ("tiny.png", 2, [0, 0, 1, 1])]:
        write_image(ds / "images" / name, rng.integers(0, 255, (size, size, 3)).astype(np.uint8))
        write_image(ds / "gt" / name, np.full((size, size), 255, np.uint8))
        rows.append([name, *map(str, box)])
    with (ds / "boxes.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    status, _, err = run_main(["eval", str(ds), "--device", "cpu", "--no-cv2"], capsys)
    assert_one_line(status, err, "eval", f"{ds / 'boxes.csv'}, line 3: ", "covers the whole 2x2 image tiny.png")
