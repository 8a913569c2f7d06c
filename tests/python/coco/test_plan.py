"""coco/plan.py: box crops, and the ground truth read from every COCO segmentation form.

A malformed segmentation is named before pycocotools sees it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from coco_fixtures import LIMIT_MEMORY, bad_segmentations
from pycocotools import mask as mask_utils

from torchgrabcut.coco.plan import (
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
from torchgrabcut.coco.plan import gt_rle
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
