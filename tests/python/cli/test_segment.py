"""`torchgrabcut segment`: a box starting with a minus, and a full disk."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from torchgrabcut.cli import main
from torchgrabcut.cli.segment import join_negative_box
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


@pytest.fixture
def img(tmp_path: Path) -> Path:
    image = np.full((40, 50, 3), 30, np.uint8)
    image[10:30, 15:35] = (40, 200, 220)
    write_image(tmp_path / "img.png", image)
    return tmp_path / "img.png"


# -- segment --box with a negative coordinate ------------------------------------------------------


@pytest.mark.parametrize("box", ["-5,10,120,110", "-1,0,5,5", "0,-3,5,5"])
def test_a_box_starting_with_a_minus_is_read_as_the_box(
    img: Path, tmp_path: Path, capsys: pytest.CaptureFixture, box: str
) -> None:
    # argparse took "-5,10,120,110" for an option: "--box: expected one argument".
    status, _, err = run_main(["segment", str(img), "--box", box, "-o", str(tmp_path / "m.png")], capsys)
    assert_one_line(status, err, "segment", "box: expected 0 <= x0 < x1 <= 50 and 0 <= y0 < y1 <= 40")
    assert "expected one argument" not in err


def test_join_negative_box_touches_nothing_else() -> None:
    assert join_negative_box(["segment", "a.png", "--box", "-5,1,2,3", "-o", "m.png"]) == [
        "segment",
        "a.png",
        "--box=-5,1,2,3",
        "-o",
        "m.png",
    ]
    unchanged = [
        ["segment", "a.png", "--box", "5,1,20,30"],
        ["segment", "a.png", "--box=-5,1,2,3"],
        ["segment", "a.png", "--box", "-o", "m.png"],  # a missing value stays argparse's error
        ["segment", "--", "--box", "-5,1,2,3"],  # after --, positional
    ]
    for argv in unchanged:
        assert join_negative_box(argv) == argv


# -- a full disk -------------------------------------------------------------------------------------


def _disk_full_after(nbytes: int) -> Any:
    """Image.save that writes ``nbytes`` then fails as a full disk does (to a path or a file object)."""

    def save(self: Image.Image, fp: Any, format: str | None = None, **params: object) -> None:
        if isinstance(fp, (str, os.PathLike)):
            with open(fp, "wb") as f:
                f.write(b"\x89PNG"[:nbytes])
        else:
            fp.write(b"\x89PNG"[:nbytes])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return save


@pytest.mark.parametrize("written", [0, 4])
@pytest.mark.parametrize("existed", [False, True])
def test_a_full_disk_names_the_mask_and_leaves_no_file_behind(
    img: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    written: int,
    existed: bool,
) -> None:
    out = tmp_path / "m.png"
    if existed:
        out.write_bytes(b"the mask of an earlier run")
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(Image.Image, "save", _disk_full_after(written))
    status, _, err = run_main(["segment", str(img), "--box", "10,5,40,35", "--device", "cpu", "-o", str(out)], capsys)
    assert_one_line(status, err, "segment", f"[Errno 28] cannot write {out}: No space left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no 0-byte mask, no temporary file
    if existed:
        assert out.read_bytes() == b"the mask of an earlier run"
