"""The command line's messages for a negative box, a box over a tiny image, a full disk,
no command at all, and Ctrl-C while it starts."""

from __future__ import annotations

import csv
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from conftest import ctrl_c_as_in_a_terminal
from torchgrabcut.cli import main
from torchgrabcut.cli.segment import join_negative_box
from torchgrabcut.imageio import read_image, write_image


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


def test_grabcut_names_the_image_of_a_batch_whose_box_covers_it() -> None:
    import torchgrabcut

    images = [np.zeros((30, 30, 3), np.uint8), np.zeros((2, 2, 3), np.uint8)]
    with pytest.raises(ValueError, match=r"^box\[1\]: covers the whole 2x2 image"):
        torchgrabcut.grabcut(images, box=[(5, 5, 20, 20), (0, 0, 2, 2)], device="cpu")


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


def test_write_image_replaces_a_file_whole_and_writes_through_a_link(tmp_path: Path) -> None:
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    out = tmp_path / "m.png"
    write_image(out, np.zeros((5, 5), np.uint8))
    write_image(out, grey)
    assert np.array_equal(read_image(out, grayscale=True), grey)
    (tmp_path / "link.png").symlink_to(out)
    write_image(tmp_path / "link.png", grey[::-1])
    assert (tmp_path / "link.png").is_symlink()
    assert np.array_equal(read_image(out, grayscale=True), grey[::-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.png", "m.png"]
    # A new file's mode is open()'s: 0o666 less the umask, not a temporary file's 0o600.
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


# -- no command: the demo, as the README says of `python -m torchgrabcut` -----------------------------


def test_no_command_runs_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, err = run_main([], capsys)
    assert status == 0, err
    assert out.startswith("torchgrabcut: no command given: running the demo"), out
    assert read_image(tmp_path / "out" / "mask.png", grayscale=True).shape == (512, 512)


# -- Ctrl-C while torch is being imported --------------------------------------------------------------


def _wait_for_torch_import(pid: int, timeout: float = 120.0) -> None:
    """Until the child has mapped libtorch (it is importing torch, which goes on for a second or more)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if "libtorch" in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError("the child never imported torch")


def _commands() -> dict[str, list[str]]:
    commands = {"python -m torchgrabcut": [sys.executable, "-m", "torchgrabcut"]}
    script = Path(sys.executable).parent / "torchgrabcut"
    if script.is_file():
        commands["the torchgrabcut script"] = [str(script)]
    return commands


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
@pytest.mark.parametrize("how", sorted(_commands()))
def test_ctrl_c_while_starting_is_one_line_and_status_130(tmp_path: Path, how: str) -> None:
    child = subprocess.Popen(
        [*_commands()[how], "demo", "-o", str(tmp_path / "out"), "--device", "cpu"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    _wait_for_torch_import(child.pid)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "interrupted" in err, err
