"""`torchgrabcut dataset` against hostile or broken inputs (issue 35, items 1-5).

Partial image sizes, an output that is an input, a file that cannot be written back,
unreadable images, two jobs on one output, file names outside --images and malformed
boxes in a file without sizes: each is found at start with one line (exit 2), or, for
an image that cannot be read, marked in the output without stopping the job (exit 4).
Most runs use two images of the clean synthetic set, to stay quick.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from coco_fixtures import clean_coco, dataset_args, run_module

from conftest import ctrl_c_as_in_a_terminal
from torchgrabcut.cli import main
from torchgrabcut.coco.hooks_for_tests import BLOCK_AFTER_ENV, EXIT_AFTER_ENV
from torchgrabcut.coco.job import DatasetOptions, run_dataset
from torchgrabcut.coco.parts import OutputShare, parts_dir, write_output
from torchgrabcut.coco.plan import SKIP_OUTSIDE, SKIP_SMALL

EXIT_IMAGE_ERRORS = 4  # the output was written, but some images could not be read (README)


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clean_coco(tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="module")
def small(full: Path) -> Path:
    """Images 2 and 3 of the clean set (000001.png, 000002.png): a small box, a box outside, 6 boxes."""
    coco = json.loads(full.read_text())
    coco["images"] = [im for im in coco["images"] if im["id"] in (2, 3)]
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in (2, 3)]
    path = full.parent / "small.json"
    path.write_text(json.dumps(coco))
    return path


@pytest.fixture(scope="module")
def small_ref(small: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The annotations of an uninterrupted run on the small set."""
    out = tmp_path_factory.mktemp("small_ref") / "out.json"
    run_dataset(_opts(small, small.parent / "images", out))
    return json.loads(out.read_text())["annotations"]


def _opts(coco: Path, images: Path, out: Path, **kw: Any) -> DatasetOptions:
    base: dict[str, Any] = {"device": "cpu", "batch_size": 4, "workers": 0, "quiet": True}
    return DatasetOptions(coco, images, out, **{**base, **kw})


def _edited(src: Path, dest: Path, edit: Any) -> Path:
    coco = json.loads(src.read_text())
    edit(coco)
    dest.write_text(json.dumps(coco))
    return dest


def _one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert err.startswith("torchgrabcut dataset: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err


def _copy_images(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


# -- 1: partial image sizes ----------------------------------------------------------------------

_ABSENT = object()


@pytest.mark.parametrize(
    "sizes",
    [
        {"width": _ABSENT},
        {"height": _ABSENT},
        {"width": None},
        {"height": None},
        {"width": None, "height": _ABSENT},
        {"width": None, "height": None},
    ],
    ids=["no width", "no height", "width null", "height null", "width null, no height", "both null"],
)
@pytest.mark.parametrize("workers", [0, 1])
def test_one_size_absent_or_null_reads_the_size_from_the_file(
    small: Path, small_ref: list[dict[str, Any]], tmp_path: Path, sizes: dict[str, Any], workers: int
) -> None:
    """As when both are absent: the size comes from the image, the masks are the same."""

    def edit(coco: dict[str, Any]) -> None:
        for im in coco["images"]:
            for key, value in sizes.items():
                if value is _ABSENT:
                    del im[key]
                else:
                    im[key] = value

    path = _edited(small, tmp_path / "in.json", edit)
    out = tmp_path / "out.json"
    summary = run_dataset(_opts(path, small.parent / "images", out, workers=workers))
    assert summary is not None and summary.image_errors == 0
    assert json.loads(out.read_text())["annotations"] == small_ref


# -- 2: an output that is an input image -------------------------------------------------------


@pytest.mark.parametrize("spelling", ["the image", "through ..", "symbolic link", "hard link", "linked folder"])
def test_output_that_is_an_input_image_is_refused(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture, spelling: str
) -> None:
    images = _copy_images(small.parent / "images", tmp_path / "images")
    coco = tmp_path / "in.json"
    coco.write_bytes(small.read_bytes())
    photo = images / "000001.png"
    before = photo.read_bytes()
    if spelling == "the image":
        out = photo
    elif spelling == "through ..":
        (images / "sub").mkdir()
        out = images / "sub" / ".." / "000001.png"
    elif spelling == "symbolic link":
        out = tmp_path / "link.png"
        out.symlink_to(photo)
    elif spelling == "hard link":
        out = tmp_path / "hard.png"
        os.link(photo, out)
    else:
        (tmp_path / "alias").symlink_to(images)
        out = tmp_path / "alias" / "000001.png"
    err = _one_line_error(capsys, ["dataset", *dataset_args(coco, images, out, "--device", "cpu")])
    assert "--output" in err and "000001.png" in err and "input image" in err, err
    assert photo.read_bytes() == before and not parts_dir(out).exists()


# -- 3: what the merge needs, checked at start; no temporary file left ---------------------------

_SURROGATE = '"a\\udcffb"'  # a lone surrogate, as a JSON escape: parses, cannot be written as UTF-8


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("info value", "info.description"),
        ("info key", "info: a key"),
        ("annotation", "annotations[1].caption"),
        ("image", "images[0].coco_url"),
        ("category", "categories[0].name"),
        ("nested list", "info.tags[1]"),
        ("raw bytes", "info.description"),
    ],
)
def test_input_that_cannot_be_written_back_is_refused_at_start(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture, where: str, named: str
) -> None:
    coco = json.loads(small.read_text())
    coco["info"]["tags"] = ["ok", "@S@"] if where == "nested list" else []
    if where == "info key":
        coco["info"]["@S@"] = 1
    elif where == "annotation":
        coco["annotations"][1]["caption"] = "@S@"
    elif where == "image":
        coco["images"][0]["coco_url"] = "@S@"
    elif where == "category":
        coco["categories"][0]["name"] = "@S@"
    elif where in ("info value", "raw bytes"):
        coco["info"]["description"] = "@S@"
    raw = json.dumps(coco).encode()
    # The surrogate written as UTF-8 bytes, which Python's JSON reader takes too (surrogatepass).
    lone = b'"a\xed\xb3\xbfb"' if where == "raw bytes" else _SURROGATE.encode()
    work = tmp_path / "work"
    work.mkdir()
    path = work / "in.json"
    path.write_bytes(raw.replace(b'"@S@"', lone))
    out = work / "out.json"
    err = _one_line_error(capsys, ["dataset", *dataset_args(path, small.parent / "images", out, "--device", "cpu")])
    assert named in err and "UTF-8" in err, err
    assert sorted(p.name for p in work.iterdir()) == ["in.json"]  # no parts folder, output, lock or temporary


def test_surrogate_pairs_and_other_text_are_written_back(
    small: Path, small_ref: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A pair of surrogate escapes is one character (not refused); non-ASCII text is kept as it is."""
    coco = json.loads(small.read_text())
    coco["info"]["description"] = "@S@"
    coco["info"]["escaped"] = "\\udcff is how it is written"
    path = tmp_path / "in.json"
    path.write_bytes(json.dumps(coco).encode().replace(b'"@S@"', b'"\\ud83d\\ude00 Z\xc3\xbcrich"'))
    out = tmp_path / "out.json"
    run_dataset(_opts(path, small.parent / "images", out))
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["info"]["description"] == "\U0001f600 Z\u00fcrich" and res["annotations"] == small_ref


@pytest.mark.parametrize("fails", ["fsync", "replace", "encode"])
def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """Disk full, a rename refused, text that does not encode: the error, and no out.json.tmp<pid>."""
    from torchgrabcut.coco import parts

    coco: dict[str, Any] = {"images": [], "annotations": [], "info": "ok"}

    def disk_full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    if fails == "fsync":
        monkeypatch.setattr(parts.os, "fsync", disk_full)
    elif fails == "replace":
        monkeypatch.setattr(parts.os, "replace", disk_full)
    else:
        coco["info"] = "\udcff"
    with pytest.raises((OSError, ValueError)):
        write_output(tmp_path / "out.json", coco, [OutputShare()], [])
    assert list(tmp_path.iterdir()) == []


# -- 4: an image that cannot be read does not stop the job ---------------------------------------


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares any size (its pixel data is empty)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


BAD_IMAGES: dict[str, Any] = {
    "truncated": lambda good: good[: len(good) // 2],
    "corrupt data": lambda good: good[:60] + bytes(range(256)) * 8,
    "not an image": lambda good: b"hello, this is text\n",
    "empty": lambda good: b"",
    "header over the pixel limit": lambda good: _png_declaring(20000, 20000),
    "size other than its record": None,  # the file is fine; the record says 250 rows
}


@pytest.mark.parametrize("bad", list(BAD_IMAGES))
@pytest.mark.parametrize("workers", [0, 1])
def test_an_unreadable_image_is_marked_and_the_rest_is_segmented(
    small: Path,
    small_ref: list[dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    bad: str,
    workers: int,
) -> None:
    images = _copy_images(small.parent / "images", tmp_path / "images")
    coco = small
    if BAD_IMAGES[bad] is None:
        coco = _edited(small, tmp_path / "in.json", lambda c: c["images"][0].update(height=250))
    else:
        photo = images / "000001.png"
        photo.write_bytes(BAD_IMAGES[bad](photo.read_bytes()))
    out = tmp_path / "out.json"
    argv = ["dataset", "--coco", str(coco), "--images", str(images), "-o", str(out)]
    rc = main([*argv, "--device", "cpu", "--batch-size", "4", "--workers", str(workers)])
    captured = capsys.readouterr()
    assert rc == EXIT_IMAGE_ERRORS, captured.err
    warning = [line for line in captured.err.splitlines() if "warning" in line]  # and the progress bar
    assert len(warning) == 1 and warning[0].startswith("dataset: warning: 1 image could not be read"), captured.err
    assert "000001.png" in warning[0] and "grabcut_error" in warning[0]
    assert "3 annotations not segmented (1 unreadable image)" in captured.out, captured.out
    src = json.loads(coco.read_text())["annotations"]
    for a_in, a_out, a_ref in zip(src, json.loads(out.read_text())["annotations"], small_ref):
        if a_in["image_id"] != 2:
            assert a_out == a_ref
        elif "grabcut_skipped" in a_ref:  # skipped from the record alone: as without the error
            assert a_out == a_ref and a_ref["grabcut_skipped"] in (SKIP_SMALL, SKIP_OUTSIDE)
        else:  # kept as it was, with the reason
            why = a_out.pop("grabcut_error")
            assert a_out == a_in and "000001.png" in why and "\n" not in why, why
            assert str(images) not in why  # the file's name in the set, not where it lies on this machine
    assert not parts_dir(out).exists()


def test_strict_stops_at_the_first_unreadable_image(small: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    images = _copy_images(small.parent / "images", tmp_path / "images")
    photo = images / "000001.png"
    photo.write_bytes(photo.read_bytes()[:100])
    out = tmp_path / "out.json"
    err = _one_line_error(
        capsys, ["dataset", *dataset_args(small, images, out, "--device", "cpu", "--strict", "--workers", "0")]
    )
    assert "000001.png" in err and not out.exists() and not parts_dir(out).exists()


def test_resume_with_an_unreadable_image_is_byte_identical(full: Path, tmp_path: Path) -> None:
    """Killed after the chunk holding the bad image, resumed: the bytes of an uninterrupted run.

    A --strict run in between does the marked image again (and stops on it), and leaves
    the parts as they were.
    """
    images = _copy_images(full.parent / "images", tmp_path / "images")
    photo = images / "000000.png"  # the first image: in the first chunk
    photo.write_bytes(photo.read_bytes()[:300])
    ref = tmp_path / "ref.json"
    out = tmp_path / "out.json"
    common = ["--device", "cpu", "--batch-size", "2", "--workers", "1"]
    whole = run_module(["-m", "torchgrabcut", "dataset", *dataset_args(full, images, ref, *common)], tmp_path)
    assert whole.returncode == EXIT_IMAGE_ERRORS, whole.stderr
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(full, images, out, *common)]
    killed = run_module(args, tmp_path, env={EXIT_AFTER_ENV: "1"})
    assert killed.returncode == 3, killed.stderr
    lines = [json.loads(x) for x in (parts_dir(out) / "rank0.jsonl").read_text().splitlines()]
    assert lines and lines[0]["image"] == 0 and all("error" in r for r in lines[0]["results"] if "skip" not in r)
    strict = run_module([*args, "--strict"], tmp_path)
    assert strict.returncode == 2 and "000000.png" in strict.stderr, strict.stderr
    assert [json.loads(x) for x in (parts_dir(out) / "rank0.jsonl").read_text().splitlines()] == lines
    resumed = run_module(args, tmp_path)
    assert resumed.returncode == EXIT_IMAGE_ERRORS, resumed.stderr
    assert out.read_bytes() == ref.read_bytes()


# -- 5: two jobs on one output, file names outside --images, malformed boxes without sizes -------


def test_a_second_job_on_the_same_output_is_refused(small: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    out = tmp_path / "out.json"
    lock = tmp_path / "out.json.lock"
    argv = ["dataset", *dataset_args(small, small.parent / "images", out, "--device", "cpu", "--workers", "0")]
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running job holds it
        err = _one_line_error(capsys, argv)
        assert "another dataset job" in err and str(out) in err, err
        assert not parts_dir(out).exists() and not out.exists()
    # A lock file left by a killed job holds no lock: the next job runs, and removes it.
    assert lock.exists()
    assert main(argv) == 0
    assert out.exists() and not lock.exists()


def test_two_processes_on_one_output(full: Path, tmp_path: Path) -> None:
    """While a job runs (held after its first chunk), a second one on its output exits at once."""
    out = tmp_path / "out.json"
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(full, full.parent / "images", out)]
    args += ["--device", "cpu", "--batch-size", "1", "--workers", "0"]
    part = parts_dir(out) / "rank0.jsonl"
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, BLOCK_AFTER_ENV: "1"},
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not (part.is_file() and part.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        second = run_module(args, tmp_path, timeout=120)
        assert second.returncode == 2, second.stderr
        assert "another dataset job" in second.stderr and len(second.stderr.strip().splitlines()) == 1
        assert len(part.read_bytes().splitlines()) == 1  # the second job did nothing
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert not (tmp_path / "out.json.lock").exists(), (err, os.listdir(tmp_path))


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "ABSOLUTE", "../000001.png", "sub/../../images/000001.png", "..", "a\x00b.png"]
)
def test_file_names_outside_images_are_refused(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture, name: str
) -> None:
    images = small.parent / "images"
    value = str(images / "000001.png") if name == "ABSOLUTE" else name
    path = _edited(small, tmp_path / "in.json", lambda c: c["images"][0].update(file_name=value))
    out = tmp_path / "out.json"
    err = _one_line_error(capsys, ["dataset", *dataset_args(path, images, out, "--device", "cpu")])
    assert "images[0] (id 2): file_name" in err and repr(value) in err, err
    if "\x00" not in value:
        assert "--allow-outside-images" in err, err
    assert not parts_dir(out).exists()


def test_allow_outside_images(small: Path, small_ref: list[dict[str, Any]], tmp_path: Path) -> None:
    images = small.parent / "images"

    def edit(coco: dict[str, Any]) -> None:
        coco["images"][0]["file_name"] = str(images / "000001.png")
        coco["images"][1]["file_name"] = "../images/000002.png"

    path = _edited(small, tmp_path / "in.json", edit)
    out = tmp_path / "out.json"
    argv = ["dataset", *dataset_args(path, images, out, "--device", "cpu", "--workers", "0", "--allow-outside-images")]
    assert main(argv) == 0
    assert json.loads(out.read_text())["annotations"] == small_ref


@pytest.mark.parametrize(
    "bbox", ["[1, 2, 3]", '[1, 2, "3", 4]', "[NaN, 2, 30, 40]", "[0, 0, -1, 5]", "null", '"1,2,3,4"', "[1, 2, true, 4]"]
)
def test_malformed_bbox_without_image_sizes_stops_the_run_at_start(
    full: Path, tmp_path: Path, capsys: pytest.CaptureFixture, bbox: str
) -> None:
    """In the last image: with a chunk per image, a check made as images are read would come too late."""
    coco = json.loads(full.read_text())
    for im in coco["images"]:
        del im["height"], im["width"]
    last = max(i for i, a in enumerate(coco["annotations"]) if a["image_id"] == 6)
    coco["annotations"][last]["bbox"] = "@B@"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(coco).replace('"@B@"', bbox))
    out = tmp_path / "out.json"
    argv = ["dataset", *dataset_args(path, full.parent / "images", out, "--device", "cpu")]
    err = _one_line_error(capsys, [*argv, "--batch-size", "1", "--workers", "0"])
    assert f"annotations[{last}] (id 25)" in err and "bbox" in err, err
    assert not parts_dir(out).exists()


def test_a_second_job_under_torchrun_is_refused_on_every_rank(small: Path, tmp_path: Path) -> None:
    """Rank 0 takes the lock for its job and tells the others: no rank of a refused job starts.

    (torchrun stops the other rank as soon as one exits, often before it prints its line.)
    """
    out = tmp_path / "out.json"
    args = [*dataset_args(small, small.parent / "images", out), "--device", "cpu", "--workers", "0"]
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    with (tmp_path / "out.json.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = run_module([*launcher, "-m", "torchgrabcut", "dataset", *args], tmp_path, timeout=240)
    assert res.returncode != 0
    refusals = [line for line in res.stderr.splitlines() if "another dataset job" in line]
    assert 1 <= len(refusals) <= 2, res.stderr[-3000:]
    assert all(line.startswith("torchgrabcut dataset: error: --output: ") for line in refusals), refusals
    assert not parts_dir(out).exists() and not out.exists()
