"""The command line, end to end in a subprocess: outputs written, errors in one line."""

from __future__ import annotations

import json
import math
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import ctrl_c_as_in_a_terminal, write_tiny_dataset
from torchgrabcut.cli import main
from torchgrabcut.imageio import LABEL_EXTENSIONS, read_image, write_image


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


# -- in-process: every option's bad values, one line and exit 2 -----------------------------------


def run_main(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """main(argv) in this process: (exit status, stderr); argparse's own exits count as statuses."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    return status, capsys.readouterr().err


def run_main_out(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """As run_main, with stdout too: (exit status, stdout, stderr)."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return status, out.out, out.err


def assert_one_line_error(status: int, err: str, command: str, needle: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"torchgrabcut {command}: error: ") or err.startswith("torchgrabcut: error: "), err
    assert needle in err, err


def _png_declaring(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Inputs good and bad: a 40x50 image, trimaps, broken files, a tiny dataset, a folder."""
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    img = np.full((40, 50, 3), 30, np.uint8) + rng.integers(0, 10, (40, 50, 3)).astype(np.uint8)
    img[10:30, 15:35] = (40, 200, 220)
    write_image(d / "img.png", img)
    (d / "bomb.png").write_bytes(_png_declaring(20000, 20000))
    (d / "empty.png").write_bytes(b"")
    (d / "text.png").write_text("hello")
    (d / "trunc.png").write_bytes((d / "img.png").read_bytes()[:200])
    Image.fromarray(np.ones((40, 50), np.float32)).save(d / "float.tif")
    Image.fromarray(np.full((40, 50), 3, np.uint16)).save(d / "mask16.png")
    write_image(d / "mask_small.png", np.full((30, 50), 3, np.uint8))
    write_image(d / "mask_labels.png", np.full((40, 50), 7, np.uint8))
    (d / "folder").mkdir()
    write_tiny_dataset(d / "ds")
    return d


_SEG = ["segment", "{d}/img.png", "--device", "cpu", "-o", "{d}/out_mask.png"]
_EVAL = ["eval", "{d}/ds", "--device", "cpu", "--no-cv2"]
_BENCH = ["bench", "--no-cv2", "--no-gpu", "--repeats", "1", "--sizes", "0.01"]
_BIG_INT = "9" * 30

BAD_VALUES: list[tuple[list[str], str]] = [
    # segment --box: the string, then the box against the 40x50 image
    *[
        ([*_SEG, "--box", box], "--box")
        for box in ("1,2,3", "a,b,c,d", "1e99,0,5,5", "1,2,3,4,5", "", "nan,0,5,5", "inf,0,5,5", "1.5,0,5,5")
    ],
    ([*_SEG, "--box", f"0,0,{_BIG_INT},5"], "--box"),
    ([*_SEG, "--box", "0,0,2147483647,5"], "box: expected 0 <= x0"),
    ([*_SEG, "--box=-1,0,5,5"], "box: expected 0 <= x0"),
    ([*_SEG, "--box", "-1,0,5,5"], "box: expected 0 <= x0"),  # read as the box, not as an option
    ([*_SEG, "--box", "0,0,51,40"], "box: expected 0 <= x0"),
    ([*_SEG, "--box", "0,0,50,41"], "box: expected 0 <= x0"),
    ([*_SEG, "--box", "5,5,1,1"], "inverted"),
    ([*_SEG, "--box", "5,5,5,9"], "empty"),
    ([*_SEG], "one of the arguments --box --mask is required"),
    ([*_SEG, "--box", "1,1,5,5", "--mask", "{d}/mask16.png"], "not allowed with"),
    # segment --max-iter and --device
    *[
        ([*_SEG, "--box", "1,1,5,5", "--max-iter", v], "--max-iter")
        for v in ("-1", "nan", "inf", "1e3", "5.0", "abc", "", _BIG_INT, "1000001")
    ],
    *[([*_SEG, "--box", "1,1,5,5", "--device", v], "--device") for v in ("foo", "mps", "", "cuda:99")],
    # segment outputs: checked before the image is read
    *[
        (["segment", "{d}/missing.png", "--box", "1,1,5,5", "-o", f"{{d}}/{name}"], "error: -o: ")
        for name in ("m.jpg", "m.jpeg", "m.JPG", "m.webp", "m", "nodir/m.png", "folder")
    ],
    (["segment", "{d}/img.png", "--box", "1,1,5,5", "-o", "{d}/img.png"], "same file as IMAGE"),
    (["segment", "{d}/img.png", "--box", "1,1,5,5", "-o", "{d}/x.png", "--overlay", "{d}/x.png"], "same file"),
    (["segment", "{d}/img.png", "--mask", "{d}/mask16.png", "-o", "{d}/mask16.png"], "same file as --mask"),
    ([*_SEG, "--box", "1,1,5,5", "--overlay", "{d}/o.xyz"], "--overlay"),
    ([*_SEG, "--box", "1,1,5,5", "--overlay", "{d}/nodir/o.png"], "--overlay"),
    # segment inputs
    (["segment", "{d}/missing.png", "--box", "1,1,5,5", "-o", "{d}/m.png"], "no such file"),
    (["segment", "{d}/folder", "--box", "1,1,5,5", "-o", "{d}/m.png"], "is a folder"),
    (["segment", "{d}/empty.png", "--box", "1,1,5,5", "-o", "{d}/m.png"], "empty (0 bytes)"),
    (["segment", "{d}/text.png", "--box", "1,1,5,5", "-o", "{d}/m.png"], "not an image"),
    (["segment", "{d}/trunc.png", "--box", "1,1,5,5", "-o", "{d}/m.png"], "cannot read"),
    (["segment", "{d}/bomb.png", "--box", "1,1,5,5", "-o", "{d}/m.png"], "MAX_IMAGE_PIXELS"),
    (["segment", "{d}/float.tif", "--box", "1,1,5,5", "-o", "{d}/m.png"], "32-bit float"),
    ([*_SEG, "--mask", "{d}/mask16.png"], "16-bit"),
    ([*_SEG, "--mask", "{d}/mask_small.png"], "mask"),
    ([*_SEG, "--mask", "{d}/mask_labels.png"], "labels 0..3"),
    ([*_SEG, "--mask", "{d}/missing.png"], "no such file"),
    # eval
    *[([*_EVAL, "--max-iter", v], "--max-iter") for v in ("-1", "nan", _BIG_INT)],
    *[([*_EVAL, "--cv2-seed", v], "--cv2-seed") for v in ("-1", "2147483648", "1e99", "abc", "nan", _BIG_INT)],
    *[([*_EVAL, "--sheet-columns", v], "--sheet-columns") for v in ("0", "-1", _BIG_INT, "nan", "1.5")],
    *[([*_EVAL, "--sheet", f"{{d}}/{v}"], "--sheet") for v in ("s.xyz", "s", "nodir/s.png", "folder")],
    ([*_EVAL, "--device", "foo"], "--device"),
    (["eval", "{d}/missing", "--device", "cpu"], "no such folder"),
    (["eval", "{d}/img.png", "--device", "cpu"], "no such folder"),
    # bench
    *[
        ([*_BENCH, "--sizes", v], "--sizes")
        for v in ("-1", "0", "nan", "inf", "-inf", "1e99", "1e400", "1e-9", "abc", "", "1,,2", "0.3,-1", "180")
    ],
    *[([*_BENCH, "--repeats", v], "--repeats") for v in ("0", "-1", "nan", _BIG_INT, "1001", "abc", "1.5")],
    *[([*_BENCH, "--max-iter", v], "--max-iter") for v in ("-1", "abc")],
    *[([*_BENCH, "--plot", f"{{d}}/{v}"], "--plot") for v in ("p.xyz", "p", "nodir/p.png", "folder")],
    ([*_BENCH, "--image", "{d}/missing.png"], "no such file"),
    ([*_BENCH, "--image", "{d}/bomb.png"], "MAX_IMAGE_PIXELS"),
    ([*_BENCH, "--image", "{d}/folder"], "is a folder"),
    ([*_BENCH, "--image", "{d}/text.png"], "not an image"),
    # demo
    *[(["demo", "-o", "{d}/demo", "--device", v], "--device") for v in ("foo", "cuda:99", "")],
    (["demo", "-o", "{d}/img.png", "--device", "cpu"], "not a folder"),
    # unknown command (no command at all runs the demo: test_cli_messages.py)
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize(
    ("argv", "needle"), BAD_VALUES, ids=[" ".join(a[0:1] + a[-2:]) or "none" for a, _ in BAD_VALUES]
)
def test_bad_option_values_are_one_line_with_exit_2(
    files: Path, capsys: pytest.CaptureFixture, argv: list[str], needle: str
) -> None:
    args = [a.replace("{d}", str(files)) for a in argv]
    status, err = run_main(args, capsys)
    assert_one_line_error(status, err, args[0] if args else "", needle)
    assert not (files / "out_mask.png").exists()


@pytest.mark.parametrize("name", ["m.jpg", "m.jpeg", "m.webp", "m.gif", "m"])
def test_lossy_mask_formats_are_refused_before_any_work(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("GrabCut ran before the output name was checked")

    monkeypatch.setattr("torchgrabcut.api.grabcut", no_work)
    monkeypatch.setattr("torchgrabcut.imageio.read_image", no_work)
    status, err = run_main(
        ["segment", str(files / "img.png"), "--box", "10,5,40,35", "-o", str(tmp_path / name)], capsys
    )
    assert_one_line_error(status, err, "segment", ".png, .bmp, .tif, .tiff, .pgm")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_an_unwritable_output_is_refused_before_any_work(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    # Permissions are faked: the tests may run as root, whom no permission stops.
    out = tmp_path / "m.png"
    if existing:
        out.write_bytes(b"old")
    denied = out if existing else tmp_path

    def access(path: object, mode: int) -> bool:
        return Path(str(path)) != denied

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("GrabCut ran before the output was checked")

    monkeypatch.setattr("torchgrabcut.imageio.os.access", access)
    monkeypatch.setattr("torchgrabcut.api.grabcut", no_work)
    status, err = run_main(["segment", str(files / "img.png"), "--box", "10,5,40,35", "-o", str(out)], capsys)
    assert_one_line_error(status, err, "segment", "read-only" if existing else "permission denied")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["m.png"] if existing else [])


def test_every_lossless_mask_format_holds_the_labels_and_the_overlay_may_be_jpeg(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cv2 = pytest.importorskip("cv2")
    masks = {}
    for suffix in LABEL_EXTENSIONS:
        out = tmp_path / f"mask{suffix}"
        argv = ["segment", str(files / "img.png"), "--box", "10,5,40,35", "--device", "cpu", "-o", str(out)]
        status, err = run_main([*argv, "--overlay", str(tmp_path / "overlay.jpg")], capsys)
        assert status == 0, err
        masks[suffix] = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
        assert np.array_equal(read_image(out, grayscale=True), masks[suffix])
    png = masks[".png"]
    assert set(np.unique(png)) <= {0, 1, 2, 3} and (png[12:28, 17:33] & 1).all()
    for suffix, mask in masks.items():
        assert np.array_equal(mask, png), suffix
    assert read_image(tmp_path / "overlay.jpg").shape == (40, 50, 3)


def test_help_states_the_mask_formats_and_the_limits(capsys: pytest.CaptureFixture) -> None:
    for command in ("segment", "bench"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        if command == "segment":
            assert ".png, .bmp, .tif, .tiff, .pgm" in text and "JPEG would change the labels" in text
            assert "up to 178,956,970 pixels (179 megapixels)" in text and "EXIF orientation" in text
        else:
            assert "each 0.001..178.957" in text and "1..1000" in text


# -- a huge declared image: one line, exit 2, in every command that reads images -------------------


def test_a_png_declaring_400_megapixels_stops_every_command_with_one_line(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(files / "ds", ds)
    shutil.copy(files / "bomb.png", ds / "images" / "im1.png")
    coco = tmp_path / "coco.json"
    coco.write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "bomb.png", "height": 20000, "width": 20000}],
                "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "iscrowd": 0, "bbox": [10, 10, 50, 40]}],
                "categories": [{"id": 1, "name": "thing"}],
            }
        )
    )
    out = tmp_path / "o.json"
    dataset = ["dataset", "--coco", str(coco), "--images", str(files), "-o", str(out), "--quiet", "--device", "cpu"]
    reason = "400.0 megapixels, over the limit of 178,956,970 pixels"
    runs = {
        "segment": ["segment", str(files / "bomb.png"), "--box", "1,1,5,5", "-o", str(tmp_path / "m.png")],
        "eval": ["eval", str(ds), "--device", "cpu", "--no-cv2"],
        "bench": ["bench", "--image", str(files / "bomb.png"), "--no-cv2", "--no-gpu"],
        "dataset --strict": [*dataset, "--workers", "0", "--strict"],
        "dataset --strict with a loader process": [*dataset, "--workers", "1", "--strict"],
    }
    for name, argv in runs.items():
        status, err = run_main(argv, capsys)
        assert_one_line_error(status, err, argv[0], reason)
        if name == "eval":
            assert "line 3" in err  # the row of boxes.csv that names it
    assert not out.exists()
    # Without --strict the dataset job does not stop on an image it cannot read (README): the
    # output is written with the annotation marked, one warning line names the image, exit 4.
    for workers in ("0", "1"):
        status, err = run_main([*dataset, "--workers", workers], capsys)
        assert status == 4, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("dataset: warning: 1 image could not be read ('bomb.png'") and reason in err, err
        (ann,) = json.loads(out.read_text())["annotations"]
        assert reason in ann.pop("grabcut_error") and "segmentation" not in ann, ann
        out.unlink()


# -- eval: a boxes.csv with a bad row names the file and the line ----------------------------------

_GOOD_ROW = "im0.png,10,7,44,36"

BAD_CSV: dict[str, tuple[str | bytes, str]] = {
    "no y1 column": ("name,x0,y0,x1\nim0.png,10,7,44\n", "missing y1"),
    "no header": (_GOOD_ROW + "\n", "missing name, x0, y0, x1, y1"),
    "empty file": ("", "an empty file"),
    "header only": ("name,x0,y0,x1,y1\n", "no boxes"),
    "short row": ("name,x0,y0,x1,y1\nim0.png,10,7,44\n", "line 2: expected 5 values"),
    "short second row": (f"name,x0,y0,x1,y1\n{_GOOD_ROW}\nim1.png\n", "line 3: expected 5 values"),
    "extra value": ("name,x0,y0,x1,y1\nim0.png,10,7,44,36,9\n", "line 2: more values"),
    "word": ("name,x0,y0,x1,y1\nim0.png,10,seven,44,36\n", "line 2: y0: expected a whole number"),
    "fraction": ("name,x0,y0,x1,y1\nim0.png,10.5,7,44,36\n", "line 2: x0: expected a whole number"),
    "empty value": ("name,x0,y0,x1,y1\nim0.png,10,7,,36\n", "line 2: x1: expected a whole number"),
    "empty name": ("name,x0,y0,x1,y1\n,10,7,44,36\n", "line 2: empty name"),
    "outside": ("name,x0,y0,x1,y1\nim0.png,10,7,80,36\n", "line 2: box 10,7,80,36 (inclusive) does not fit"),
    "negative": ("name,x0,y0,x1,y1\nim0.png,-1,7,44,36\n", "line 2: box -1,7,44,36"),
    "huge": (f"name,x0,y0,x1,y1\nim0.png,10,7,{_BIG_INT},36\n", "does not fit"),
    "inverted": ("name,x0,y0,x1,y1\nim0.png,44,7,10,36\n", "line 2: box 44,7,10,36"),
    "missing image": ("name,x0,y0,x1,y1\ngone.png,10,7,44,36\n", "line 2: image: no such file"),
    "not utf-8": (b"name,x0,y0,x1,y1\n\xe9t\xe9.png,10,7,44,36\n", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_eval_names_the_file_and_line_of_a_bad_box_row(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture, case: str
) -> None:
    shutil.copytree(files / "ds", tmp_path / "ds")
    text, needle = BAD_CSV[case]
    csv_path = tmp_path / "ds" / "boxes.csv"
    if isinstance(text, bytes):
        csv_path.write_bytes(text)
    else:
        csv_path.write_text(text)
    status, err = run_main(["eval", str(tmp_path / "ds"), "--device", "cpu", "--no-cv2"], capsys)
    assert_one_line_error(status, err, "eval", needle)
    assert str(csv_path) in err


def test_eval_reads_a_boxes_csv_with_a_byte_order_mark(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    shutil.copytree(files / "ds", tmp_path / "ds")
    csv_path = tmp_path / "ds" / "boxes.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + csv_path.read_bytes())  # as spreadsheet programs save it
    status, err = run_main(["eval", str(tmp_path / "ds"), "--device", "cpu", "--no-cv2", "--max-iter", "1"], capsys)
    assert status == 0, err


@pytest.mark.parametrize("megapixels", [-1.0, 0.0, math.nan, math.inf, 1e99, 1e-9, 180.0])
def test_bench_sizes_checks_its_sizes_before_reading_the_image(tmp_path: Path, megapixels: float) -> None:
    from torchgrabcut.tools.speed import bench_sizes

    with pytest.raises(ValueError, match=r"megapixels: expected"):
        bench_sizes(tmp_path / "not_read.png", (0.3, megapixels))
    with pytest.raises(ValueError, match=r"repeats: expected a whole number >= 1"):
        bench_sizes(tmp_path / "not_read.png", (0.3,), repeats=0)


# -- no command: the demo, as the README says of `python -m torchgrabcut` -----------------------------


def test_no_command_runs_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, err = run_main_out([], capsys)
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
