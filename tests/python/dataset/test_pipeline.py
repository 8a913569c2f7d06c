"""dataset/pipeline.py: an image that cannot be read does not stop the job (issue 35, item 4).

Its annotations are marked `grabcut_error` and the rest is segmented (exit 4); `--strict`
stops at the first such image (exit 2); a resumed run gives the bytes of an uninterrupted one.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import dataset_fixtures
import pytest
from coco_fixtures import (
    copy_images,
    dataset_args,
    edited_coco,
    one_line_error,
    run_module,
)
from dataset_hooks import hooked

from torchgrabcut.cli import main
from torchgrabcut.dataset.parts import parts_dir
from torchgrabcut.dataset.plan import SKIP_OUTSIDE, SKIP_SMALL

EXIT_IMAGE_ERRORS = 4  # the output was written, but some images could not be read (README)

# The shared fixtures (dataset_fixtures.py), bound here: pytest looks a fixture up by its name in the test's module.
full, small, small_ref = dataset_fixtures.full, dataset_fixtures.small, dataset_fixtures.small_ref


# -- an image that cannot be read ------------------------------------------------------------------


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
    images = copy_images(small.parent / "images", tmp_path / "images")
    coco = small
    if BAD_IMAGES[bad] is None:
        coco = edited_coco(small, tmp_path / "in.json", lambda c: c["images"][0].update(height=250))
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
    images = copy_images(small.parent / "images", tmp_path / "images")
    photo = images / "000001.png"
    photo.write_bytes(photo.read_bytes()[:100])
    out = tmp_path / "out.json"
    err = one_line_error(
        capsys, ["dataset", *dataset_args(small, images, out, "--device", "cpu", "--strict", "--workers", "0")]
    )
    assert "000001.png" in err and not out.exists() and not parts_dir(out).exists()


def test_resume_with_an_unreadable_image_is_byte_identical(full: Path, tmp_path: Path) -> None:
    """Killed after the chunk holding the bad image, resumed: the bytes of an uninterrupted run.

    A --strict run in between does the marked image again (and stops on it), and leaves
    the parts as they were.
    """
    images = copy_images(full.parent / "images", tmp_path / "images")
    photo = images / "000000.png"  # the first image: in the first chunk
    photo.write_bytes(photo.read_bytes()[:300])
    ref = tmp_path / "ref.json"
    out = tmp_path / "out.json"
    common = ["--device", "cpu", "--batch-size", "2", "--workers", "1"]
    whole = run_module(["-m", "torchgrabcut", "dataset", *dataset_args(full, images, ref, *common)], tmp_path)
    assert whole.returncode == EXIT_IMAGE_ERRORS, whole.stderr
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(full, images, out, *common)]
    killed = run_module(hooked(args, exit_after=1), tmp_path)
    assert killed.returncode == 3, killed.stderr
    lines = [json.loads(x) for x in (parts_dir(out) / "rank0.jsonl").read_text().splitlines()]
    assert lines and lines[0]["image"] == 0 and all("error" in r for r in lines[0]["results"] if "skip" not in r)
    strict = run_module([*args, "--strict"], tmp_path)
    assert strict.returncode == 2 and "000000.png" in strict.stderr, strict.stderr
    assert [json.loads(x) for x in (parts_dir(out) / "rank0.jsonl").read_text().splitlines()] == lines
    resumed = run_module(args, tmp_path)
    assert resumed.returncode == EXIT_IMAGE_ERRORS, resumed.stderr
    assert out.read_bytes() == ref.read_bytes()
