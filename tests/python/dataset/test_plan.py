"""dataset/plan.py: box crops, the ground truth read from every COCO segmentation form, and the input checked.

A malformed segmentation is named before pycocotools sees it. Partial image sizes, text
that could not be written back, file names outside --images and malformed boxes in a file
without image sizes are found by the job at start (issue 35, items 1, 3 and 5).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import dataset_fixtures
import numpy as np
import pytest
from coco_fixtures import (
    LIMIT_MEMORY,
    bad_segmentations,
    dataset_args,
    dataset_opts,
    edited_coco,
    one_line_error,
)
from pycocotools import mask as mask_utils

from torchgrabcut.cli import main
from torchgrabcut.dataset.job import run_dataset
from torchgrabcut.dataset.parts import parts_dir
from torchgrabcut.dataset.plan import (
    SKIP_NO_BACKGROUND,
    SKIP_OUTSIDE,
    SKIP_SMALL,
    box_crop,
    decode_rle_counts,
    gt_rle,
    segmentation_error,
)

# -- planning ------------------------------------------------------------------------------------


def test_box_crop_geometry() -> None:
    # bbox [10.5, 20, 30, 40.2] touches pixels x 10..40, y 20..60 -> half-open (10, 20, 41, 61); 31x41 px.
    # margins: x max(8, ceil(0.1 * 31)) = 8, y max(8, ceil(4.1)) = 8 -> crop (2, 12, 49, 69).
    crop, box = box_crop([10.5, 20, 30, 40.2], 100, 100, 0.1, 8)  # type: ignore[misc]
    assert crop == (2, 12, 49, 69) and box == (8, 8, 39, 49)
    # a larger fraction wins over the minimum: ceil(0.5 * 31) = 16, ceil(0.5 * 41) = 21; clipped at 0 and 100.
    crop, box = box_crop([10.5, 20, 30, 40.2], 100, 80, 0.5, 8)  # type: ignore[misc]
    assert crop == (0, 0, 57, 80) and box == (10, 20, 41, 61)
    # whole numbers stay whole: [5, 5, 10, 10] is pixels 5..14 exactly, float noise does not add one
    assert box_crop([5.0, 5.0, 10.0000000001, 10.0], 50, 50, 0.0, 0) == ((5, 5, 15, 15), (0, 0, 10, 10))
    # a box over the whole image: crop = box; GrabCut uses the crop's border as background
    assert box_crop([0, 0, 64, 48], 64, 48, 0.1, 8) == ((0, 0, 64, 48), (0, 0, 64, 48))
    assert box_crop([0, 0, 2, 2], 2, 2, 0.1, 8) == SKIP_NO_BACKGROUND
    assert box_crop([3, 3, 1.5, 20], 50, 50, 0.1, 8) == SKIP_SMALL
    assert box_crop([49.2, 3, 5, 20], 50, 50, 0.1, 8) == SKIP_SMALL  # pixel 49 alone is left after clipping
    assert box_crop([60, 3, 5, 20], 50, 50, 0.1, 8) == SKIP_OUTSIDE
    assert box_crop([-10, 3, 9.9, 20], 50, 50, 0.1, 8) == SKIP_OUTSIDE
    for bad in ([1, 2, 3], "1,2,3,4", [1, 2, -3, 4], [1, 2, float("nan"), 4], [1, 2, True, 4]):
        with pytest.raises(ValueError, match="bbox"):
            box_crop(bad, 50, 50, 0.1, 8)


def test_gt_rle_reads_polygons_and_both_rle_forms() -> None:
    h, w = 30, 40
    truth = np.zeros((h, w), np.uint8)
    truth[5:20, 10:30] = 1
    # uncompressed RLE by hand: column-major runs, starting with a run of zeros
    flat = truth.flatten(order="F")
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flat, [0]])))
    counts = np.diff(np.concatenate([[0], edges, [flat.size]])).tolist()
    counts = [c for c in counts if c > 0] if flat[0] == 0 else [0, *counts]
    assert sum(counts) == h * w
    compressed = mask_utils.encode(np.asfortranarray(truth))
    forms = [
        {"size": [h, w], "counts": counts},
        {"size": [h, w], "counts": compressed["counts"].decode()},
        [[10, 5, 30, 5, 30, 20, 10, 20]],  # the rectangle's corners: pycocotools covers the same pixels
    ]
    for seg in forms:
        rle = gt_rle(seg, h, w, mask_utils)
        assert rle is not None
        assert np.array_equal(mask_utils.decode(rle), truth), seg
    assert gt_rle([], h, w, mask_utils) is None and gt_rle(None, h, w, mask_utils) is None
    with pytest.raises(ValueError, match="size"):
        gt_rle({"size": [w, h], "counts": counts}, h, w, mask_utils)
    with pytest.raises(ValueError, match="polygon"):
        gt_rle([[1, 2, 3, 4]], h, w, mask_utils)


_GT_RLE_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from pycocotools import mask as mask_utils
from coco_fixtures import bad_segmentations
from torchgrabcut.dataset.plan import gt_rle
{limit}
h, w = 30, 40
m = np.zeros((h, w), np.uint8, order="F")
m[5:20, 10:30] = 1
ours = mask_utils.encode(m)
for name, seg in bad_segmentations(h, w).items():
    print(name, flush=True)
    try:
        gt = gt_rle(seg, h, w, mask_utils)
    except ValueError as err:
        assert str(err).startswith("segmentation: "), (name, err)
        continue
    # not refused: pycocotools gets it (and may crash or hang on it, failing the test)
    mask_utils.iou([ours], [gt], [0])
    sys.exit(f"not refused: {{name}}")
print("ok")
"""


def test_every_malformed_segmentation_is_named() -> None:
    """Each bad value gets a reason from pure Python; good forms (and slightly outside polygons) pass."""
    h, w = 30, 40
    for name, seg in bad_segmentations(h, w).items():
        err = segmentation_error(seg, h, w)
        assert isinstance(err, str) and err and "\n" not in err, (name, err)
    good = mask_utils.encode(np.asfortranarray(np.eye(h, w, dtype=np.uint8)))["counts"]
    for seg in (
        None,
        [],
        {},
        [[10, 5, 30, 5, 30, 20, 10, 20]],
        [[-40, -30, 80, -30, 80, 60]],  # out of the image by its own size at most: pycocotools clips it
        [[0.5, 0.5, 39.5, 0.5, 20.25, 29.5], [1, 1, 3, 1, 2, 2]],
        {"size": [h, w], "counts": [h * w]},
        {"size": [h, w], "counts": [0, 600, 600]},  # starts with foreground
        {"size": [h, w], "counts": [10.0, float(h * w - 10)]},  # whole floats, as some writers give them
        {"size": [h, w], "counts": good},
        {"size": [h, w], "counts": good.decode()},
        {"size": [float(h), float(w)], "counts": good.decode()},
    ):
        assert segmentation_error(seg, h, w) is None, seg


def test_gt_rle_never_hands_pycocotools_a_malformed_value(tmp_path: Path) -> None:
    script = _GT_RLE_CHILD.format(limit=LIMIT_MEMORY)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).resolve().parents[1])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    assert proc.returncode == 0 and last == ["ok"], f"rc {proc.returncode} at {last}: {proc.stderr[-2000:]}"


def test_rle_counts_decoder_reads_what_pycocotools_writes() -> None:
    """Our decoder of compressed counts against the runs of the masks pycocotools encoded."""
    rng = np.random.default_rng(5)
    for t in range(200):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if t % 4 == 0:  # long runs: values of several 5-bit groups, and negative differences
            m[:] = 0
            m[int(rng.integers(0, h)) :, int(rng.integers(0, w)) :] = 1
        flat = m.flatten(order="F")
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]])
        runs = ([0] if flat[0] else []) + np.diff(bounds).tolist()
        counts = mask_utils.encode(np.asfortranarray(m))["counts"]
        assert decode_rle_counts(counts).tolist() == runs
        assert decode_rle_counts(counts.decode()).tolist() == runs
    big = np.zeros((12000, 12000), np.uint8, order="F")  # a first run of 144M pixels: 6 groups
    big[-1, -1] = 1
    assert decode_rle_counts(mask_utils.encode(big)["counts"]).tolist() == [12000 * 12000 - 1, 1]


# -- the input, checked by the dataset job at start ---------------------------------------------

# The shared fixtures (dataset_fixtures.py), bound here: pytest looks a fixture up by its name in the test's module.
full, small, small_ref = dataset_fixtures.full, dataset_fixtures.small, dataset_fixtures.small_ref


# -- image sizes: one absent or null is read as neither (issue 35, item 1) -------------------------


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

    path = edited_coco(small, tmp_path / "in.json", edit)
    out = tmp_path / "out.json"
    summary = run_dataset(dataset_opts(path, small.parent / "images", out, workers=workers))
    assert summary is not None and summary.image_errors == 0
    assert json.loads(out.read_text())["annotations"] == small_ref


# -- text the output could not be written with, refused at start (issue 35, item 3) ----------------


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
    err = one_line_error(capsys, ["dataset", *dataset_args(path, small.parent / "images", out, "--device", "cpu")])
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
    run_dataset(dataset_opts(path, small.parent / "images", out))
    res = json.loads(out.read_text(encoding="utf-8"))
    assert res["info"]["description"] == "\U0001f600 Z\u00fcrich" and res["annotations"] == small_ref


# -- file names outside --images (issue 35, item 5) ------------------------------------------------


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "ABSOLUTE", "../000001.png", "sub/../../images/000001.png", "..", "a\x00b.png"]
)
def test_file_names_outside_images_are_refused(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture, name: str
) -> None:
    images = small.parent / "images"
    value = str(images / "000001.png") if name == "ABSOLUTE" else name
    path = edited_coco(small, tmp_path / "in.json", lambda c: c["images"][0].update(file_name=value))
    out = tmp_path / "out.json"
    err = one_line_error(capsys, ["dataset", *dataset_args(path, images, out, "--device", "cpu")])
    assert "images[0] (id 2): file_name" in err and repr(value) in err, err
    if "\x00" not in value:
        assert "--allow-outside-images" in err, err
    assert not parts_dir(out).exists()


def test_allow_outside_images(small: Path, small_ref: list[dict[str, Any]], tmp_path: Path) -> None:
    images = small.parent / "images"

    def edit(coco: dict[str, Any]) -> None:
        coco["images"][0]["file_name"] = str(images / "000001.png")
        coco["images"][1]["file_name"] = "../images/000002.png"

    path = edited_coco(small, tmp_path / "in.json", edit)
    out = tmp_path / "out.json"
    argv = ["dataset", *dataset_args(path, images, out, "--device", "cpu", "--workers", "0", "--allow-outside-images")]
    assert main(argv) == 0
    assert json.loads(out.read_text())["annotations"] == small_ref


# -- malformed boxes in a file without image sizes (issue 35, item 5) ------------------------------


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
    err = one_line_error(capsys, [*argv, "--batch-size", "1", "--workers", "0"])
    assert f"annotations[{last}] (id 25)" in err and "bbox" in err, err
    assert not parts_dir(out).exists()
