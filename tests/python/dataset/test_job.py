"""`torchgrabcut dataset`: COCO boxes in, COCO RLE masks out; resumable, sharded, checked against ground truth."""

from __future__ import annotations

import gc
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from coco_fixtures import (
    LIMIT_MEMORY,
    REPO,
    bad_segmentations,
    clean_coco,
    dataset_args,
    decode_segmentation,
    grabcut50_coco,
    numpy_iou,
    run_module,
)
from dataset_hooks import hooked
from PIL import Image
from synthetic_coco import repeat_coco

from conftest import ctrl_c_as_in_a_terminal, requires_cuda
from torchgrabcut import grabcut
from torchgrabcut.cli import main
from torchgrabcut.dataset.calls import GrabCutCalls
from torchgrabcut.dataset.job import DatasetOptions, run_dataset
from torchgrabcut.dataset.parts import OutputShare, parts_dir, rewrite_annotation, write_output
from torchgrabcut.dataset.plan import (
    SKIP_CROWD,
    SKIP_OUTSIDE,
    SKIP_SMALL,
    BoxPlan,
    ImagePlan,
)
from torchgrabcut.dataset.timing import PHASES, time_covered
from torchgrabcut.tools.evaluate import evaluate_dataset, load_dataset, score


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clean_coco(tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="module")
def reference(clean: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """One uninterrupted in-process run on the CPU: the output every other run must equal, byte for byte."""
    out = tmp_path_factory.mktemp("ref") / "out.json"
    summary = run_dataset(
        DatasetOptions(clean, clean.parent / "images", out, device="cpu", batch_size=4, workers=0, quiet=True)
    )
    return out, summary


def _opts(clean: Path, out: Path, **kw: object) -> DatasetOptions:
    base: dict[str, object] = {"device": "cpu", "batch_size": 4, "workers": 0, "quiet": True}
    return DatasetOptions(clean, clean.parent / "images", out, **{**base, **kw})  # type: ignore[arg-type]


# -- malformed ground truth: checked before pycocotools sees it ------------------------------------


# -- the job on a clean synthetic set ---------------------------------------------------------------


def test_output_masks_skips_and_iou(clean: Path, reference: tuple[Path, object]) -> None:
    out, summary = reference
    src = json.loads(clean.read_text())
    res = json.loads(out.read_text())
    assert [k for k in res] == [k for k in src]
    assert {k: v for k, v in res.items() if k != "annotations"} == {k: v for k, v in src.items() if k != "annotations"}
    assert [a["id"] for a in res["annotations"]] == [a["id"] for a in src["annotations"]]
    sizes = {im["id"]: (im["height"], im["width"]) for im in src["images"]}
    reasons = {901: SKIP_CROWD, 902: SKIP_SMALL, 903: SKIP_OUTSIDE, 905: SKIP_CROWD}
    ious, segmented = [], 0
    for a_in, a_out in zip(src["annotations"], res["annotations"]):
        if a_in["id"] in reasons:
            assert a_out == {**a_in, "grabcut_skipped": reasons[a_in["id"]]}
            continue
        segmented += 1
        h, w = sizes[a_in["image_id"]]
        assert a_out["segmentation"]["size"] == [h, w]
        ours = decode_segmentation(a_out["segmentation"], h, w)
        assert a_out["area"] == float(ours.sum())
        x, y, bw, bh = a_in["bbox"]  # the mask stays in the box (outside it is hard background)
        inside = np.zeros((h, w), bool)
        inside[math.floor(y) : math.ceil(y + bh), math.floor(x) : math.ceil(x + bw)] = True
        assert not (ours & ~inside).any()
        assert ours.any() or a_in["id"] == 904, a_in["id"]  # 904 is a box on plain background
        if a_in.get("segmentation"):
            iou = numpy_iou(ours, decode_segmentation(a_in["segmentation"], h, w))
            assert a_out["grabcut_iou"] == pytest.approx(iou, abs=1e-4)
            ious.append(iou)
        else:
            assert "grabcut_iou" not in a_out
    assert summary.boxes == segmented and summary.skipped == {SKIP_CROWD: 2, SKIP_SMALL: 1, SKIP_OUTSIDE: 1}
    assert summary.images == 7 and summary.annotations == len(src["annotations"])
    assert summary.iou_count == len(ious) == segmented - 1  # 904 has no segmentation
    assert summary.iou_mean == pytest.approx(np.mean(ious), abs=1e-9)  # pycocotools' RLE IoU = numpy's
    assert summary.iou_mean > 0.9  # clean shapes: GrabCut finds them
    assert min(ious) > 0.75
    assert summary.empty == sum(a.get("area") == 0 for a in res["annotations"]) <= 1
    assert summary.run_boxes == segmented
    assert not parts_dir(out).exists()  # removed after the merge
    # The wall time by phase: all of them, in order, adding up to the run's seconds.
    assert tuple(summary.phases) == PHASES and min(summary.phases.values()) >= 0
    assert sum(summary.phases.values()) == pytest.approx(summary.seconds, rel=1e-9)
    assert summary.phases["segmenting"] > summary.phases["merge"]
    assert "time: set-up " in summary.format() and " s, merge " in summary.format()


def test_output_is_the_compact_json_of_its_document(clean: Path, reference: tuple[Path, object]) -> None:
    """The output, joined from the ranks' annotation texts, is json.dumps of what it holds; other keys as input."""
    text = reference[0].read_text(encoding="utf-8")
    doc = json.loads(text)
    assert text == json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    src = json.loads(clean.read_text())
    assert list(doc) == list(src) and all(doc[k] == src[k] for k in src if k != "annotations")


def test_write_output_joins_shares_in_annotation_order(tmp_path: Path) -> None:
    """Shares in any order, an image in no share and text that is not ASCII: json.dumps's bytes, or an error."""
    coco = {
        "info": {"name": "Z\u00fcrich \u2013 \u2603", "v": [1.5, None, True]},
        "images": [{"id": 7, "file_name": "a.jpg"}, {"id": 8, "file_name": "b.jpg"}],
        "annotations": [
            {"id": 1, "image_id": 8, "bbox": [0, 0, 4, 4], "note": "ß"},
            {"id": 2, "image_id": 7, "bbox": [1, 1, 3, 3]},
            {"id": 3, "image_id": 8, "bbox": [2, 2, 1, 1]},
            {"id": 4, "image_id": 99, "bbox": [0, 0, 1, 1]},  # in no image's line: written as it is
        ],
        "categories": [],
    }
    line_b = {
        "image": 1,
        "size": [5, 6],
        "results": [{"a": 0, "counts": "0a", "area": 3, "iou": 0.123456}, {"a": 2, "skip": "box under 2 px"}],
    }
    line_a = {"image": 0, "size": [5, 6], "results": [{"a": 1, "counts": "1b", "area": 0}]}
    first, second = OutputShare(), OutputShare()
    second.add(coco, line_b, keep_gt=True)
    first.add(coco, line_a, keep_gt=True)
    out = tmp_path / "out.json"
    write_output(out, coco, [second, first], [0, 1])
    expected = dict(coco)
    expected["annotations"] = [
        rewrite_annotation(coco["annotations"][0], [5, 6], line_b["results"][0], True),
        rewrite_annotation(coco["annotations"][1], [5, 6], line_a["results"][0], True),
        rewrite_annotation(coco["annotations"][2], [5, 6], line_b["results"][1], True),
        coco["annotations"][3],
    ]
    assert out.read_bytes() == json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode()
    assert expected["annotations"][0]["grabcut_iou"] == 0.1235 and expected["annotations"][2]["grabcut_skipped"]
    assert (second.boxes, second.empty, second.skipped, second.ious) == (1, 0, {"box under 2 px": 1}, [0.123456])
    assert (first.boxes, first.empty) == (1, 1)
    with pytest.raises(RuntimeError, match=r"1 images have no result yet \(first: images\[1\]\)"):
        write_output(out, coco, [first], [0, 1])


def test_masks_are_grabcut_on_the_crop(clean: Path, reference: tuple[Path, object]) -> None:
    """The pasted mask equals torchgrabcut.grabcut on the crop cut by hand (margin 0.1, at least 8 px)."""
    src = json.loads(clean.read_text())
    res = json.loads(reference[0].read_text())
    files = {im["id"]: im["file_name"] for im in src["images"]}
    checked = 0
    for a in res["annotations"][:6]:
        if "grabcut_skipped" in a:
            continue
        rgb = np.asarray(Image.open(clean.parent / "images" / files[a["image_id"]]).convert("RGB"))
        bgr = np.ascontiguousarray(rgb[:, :, ::-1])
        h, w = rgb.shape[:2]
        x, y, bw, bh = a["bbox"]
        x0, y0, x1, y1 = math.floor(x), math.floor(y), math.ceil(x + bw), math.ceil(y + bh)
        mx, my = max(8, math.ceil(0.1 * (x1 - x0))), max(8, math.ceil(0.1 * (y1 - y0)))
        cx0, cy0, cx1, cy1 = max(0, x0 - mx), max(0, y0 - my), min(w, x1 + mx), min(h, y1 + my)
        m = grabcut(bgr[cy0:cy1, cx0:cx1], box=(x0 - cx0, y0 - cy0, x1 - cx0, y1 - cy0), device="cpu")
        expected = np.zeros((h, w), bool)
        expected[cy0:cy1, cx0:cx1] = (m & 1).astype(bool)
        assert np.array_equal(decode_segmentation(a["segmentation"], h, w), expected)
        checked += 1
    assert checked >= 3


class _RecordingPost:
    """Stands in for the post-processing thread: keeps what it is handed."""

    def __init__(self) -> None:
        self.items: list[tuple[str, object]] = []

    def put(self, item: tuple[str, object]) -> None:
        self.items.append(item)


def _calls_with(run: object, tmp_path: Path) -> tuple[GrabCutCalls, _RecordingPost]:
    post = _RecordingPost()
    stages = {"wait_images": 0.0, "wait_calls": 0.0, "wait_post": 0.0}
    opts = DatasetOptions(tmp_path, tmp_path, tmp_path / "out.json", device="cpu")
    calls = GrabCutCalls(opts, torch.device("cpu"), post, stages, threads=2)
    calls._run = run  # type: ignore[method-assign]
    return calls, post


def _one_box_plans(n: int) -> list[ImagePlan]:
    return [ImagePlan(i, f"{i}.png", 8, 8, anns=[i], boxes=[BoxPlan(i, (0, 0, 8, 8), (1, 1, 7, 7))]) for i in range(n)]


def test_calls_reach_post_in_order_when_they_finish_out_of_order(tmp_path: Path) -> None:
    """Two calls at once, the second done first: post still gets masks in submission order, then the chunk."""
    second_done = threading.Event()
    order: list[int] = []

    def run(crops: list[np.ndarray], boxes: list[object]) -> list[np.ndarray]:
        first = int(crops[0][0, 0, 0]) == 0
        if first:
            assert second_done.wait(10), "the second call ran while the first was still running"
        order.append(0 if first else 1)
        if not first:
            second_done.set()
        return [c[:, :, 0].copy() for c in crops]

    calls, post = _calls_with(run, tmp_path)
    plans = _one_box_plans(4)
    images = [np.full((8, 8, 3), i, dtype=np.uint8) for i in range(4)]
    items = [(p, 0, im) for p, im in zip(plans, images)]
    calls.submit(items[:2])
    calls.submit(items[2:])
    calls.end_chunk(plans)
    calls.finish()
    assert order == [1, 0], "the calls overlapped and the second finished first"
    kinds = [kind for kind, _ in post.items]
    assert kinds == ["masks", "masks", "chunk"]
    handed = [plan.image for _, payload in post.items[:2] for plan, _, _ in payload]  # type: ignore[attr-defined]
    assert handed == [0, 1, 2, 3]
    for _, payload in post.items[:2]:
        for plan, _, mask in payload:  # type: ignore[attr-defined]
            assert np.array_equal(mask, np.full((8, 8), plan.image)), "each mask goes with its own box"


def test_time_covered_is_the_union_of_spans() -> None:
    assert time_covered([]) == 0.0
    assert time_covered([(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (5.5, 5.7)]) == pytest.approx(4.0)
    calls = GrabCutCalls(_opts(Path("x.json"), Path("out.json")), torch.device("cpu"), None, {})
    calls.spans = [(1.0, 2.0), (1.5, 4.0), (6.0, 7.0)]
    assert calls.timeline(0.5, 8.0) == pytest.approx(
        {"before_calls": 0.5, "calls_running": 4.0, "in_calls": 4.5, "after_calls": 1.0}
    )


def test_a_failed_call_raises_in_the_main_thread(tmp_path: Path) -> None:
    def run(crops: list[np.ndarray], boxes: list[object]) -> list[np.ndarray]:
        raise torch.OutOfMemoryError("out of memory (test)")

    calls, post = _calls_with(run, tmp_path)
    plans = _one_box_plans(1)
    with pytest.raises(torch.OutOfMemoryError, match="test"):  # from whichever step sees the call finished
        calls.submit([(plans[0], 0, np.zeros((8, 8, 3), dtype=np.uint8))])
        calls.end_chunk(plans)
        calls.finish()
    calls.abandon()
    assert post.items == [], "nothing of a failed call, nor its chunk, reaches the part file"


def test_batches_too_big_for_the_device_are_split(
    clean: Path,
    reference: tuple[Path, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """A call that runs out of device memory is retried in halves: same bytes, one message."""
    import torchgrabcut.api

    real = torchgrabcut.api.grabcut
    sizes: list[int] = []

    def small_device(image: list[np.ndarray], **kw: object) -> object:
        sizes.append(len(image))
        if len(image) > 1:
            raise torch.OutOfMemoryError("CUDA out of memory (test: one crop at a time fits)")
        return real(image, **kw)

    monkeypatch.setattr(torchgrabcut.api, "grabcut", small_device)
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, batch_size=4, quiet=False))
    assert out.read_bytes() == reference[0].read_bytes()
    assert 4 in sizes and 2 in sizes and 1 in sizes, "halved until it fits"
    err = capsys.readouterr().err
    assert err.count("did not fit in the device's memory") == 1, err


def test_same_bytes_whatever_batch_size_and_workers(clean: Path, reference: tuple[Path, object], tmp_path: Path):
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, batch_size=1, workers=2))
    assert out.read_bytes() == reference[0].read_bytes()
    run_dataset(_opts(clean, out, batch_size=64))
    assert out.read_bytes() == reference[0].read_bytes()


def test_repeated_set_gives_every_copy_the_masks_of_the_original(
    clean: Path, reference: tuple[Path, object], tmp_path: Path
) -> None:
    """repeat_coco (the multi-GPU scaling set): copies read the same files and get the same masks."""
    repeated = repeat_coco(clean, tmp_path / "repeated.json", 3)
    src = json.loads(clean.read_text())
    step_img = max(im["id"] for im in src["images"])
    step_ann = max(a["id"] for a in src["annotations"])
    out = tmp_path / "out.json"
    run_dataset(
        DatasetOptions(repeated, clean.parent / "images", out, device="cpu", batch_size=8, workers=0, quiet=True)
    )
    ref = json.loads(reference[0].read_text())
    res = json.loads(out.read_text())
    n_img, n_ann = len(ref["images"]), len(ref["annotations"])
    assert len(res["images"]) == 3 * n_img and len(res["annotations"]) == 3 * n_ann
    for k in range(3):
        for a_ref, a in zip(ref["annotations"], res["annotations"][k * n_ann : (k + 1) * n_ann]):
            assert a == {**a_ref, "id": k * step_ann + a_ref["id"], "image_id": k * step_img + a_ref["image_id"]}
        for im_ref, im in zip(ref["images"], res["images"][k * n_img : (k + 1) * n_img]):
            assert im == {**im_ref, "id": k * step_img + im_ref["id"]}
    with pytest.raises(ValueError, match="at least 1"):
        repeat_coco(clean, tmp_path / "none.json", 0)


def test_keep_gt_and_keep_parts(clean: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert gc.get_freeze_count() == 0
    run_dataset(_opts(clean, out, keep_gt=True, keep_parts=True))
    assert gc.get_freeze_count() == 0  # the job froze the input's objects for its run only
    src = json.loads(clean.read_text())
    res = json.loads(out.read_text())
    for a_in, a_out in zip(src["annotations"], res["annotations"]):
        if a_in.get("segmentation") and "grabcut_skipped" not in a_out:
            assert a_out["segmentation_gt"] == a_in["segmentation"]
        else:
            assert "segmentation_gt" not in a_out
    lines = (parts_dir(out) / "rank0.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["image"] for line in lines) == list(range(7))  # images 0..5 and the crowd-only 6
    # A rerun finds everything done, segments nothing, and writes the same file.
    before = out.read_bytes()
    out.unlink()
    summary = run_dataset(_opts(clean, out))
    assert summary is not None and summary.run_boxes == 0 and summary.run_images == 0
    assert out.read_bytes() != before  # without --keep-gt this time
    assert "segmentation_gt" not in out.read_text()


def test_image_without_size_in_the_file(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    coco = json.loads(clean.read_text())
    for im in coco["images"]:
        del im["height"], im["width"]
    path = tmp_path / "nosize.json"
    path.write_text(json.dumps(coco))
    out = tmp_path / "out.json"
    run_dataset(DatasetOptions(path, clean.parent / "images", out, device="cpu", workers=1, quiet=True))
    # the same annotations; the crowd-only image (whose file is missing) is not read to learn its size
    assert json.loads(out.read_text())["annotations"] == json.loads(reference[0].read_text())["annotations"]


_CLI_CHILD = """
import sys
import torch
from pycocotools import mask
from torchgrabcut.cli import main
{limit}
sys.exit(main(sys.argv[1:]))
"""


def test_malformed_ground_truth_is_segmented_not_scored(
    clean: Path, reference: tuple[Path, object], tmp_path: Path
) -> None:
    """The job finishes: those boxes get their masks, 'grabcut_gt_error' instead of an IoU, and one warning."""
    coco = json.loads(clean.read_text())
    pick = {
        2: "polygon NaN",
        5: "polygon 2e9",
        8: "counts over h*w",
        12: "counts negative",
        16: "string truncated",
        21: "string",
        24: "RLE size swapped",
    }
    bad = bad_segmentations(240, 320)
    for ann in coco["annotations"]:
        if ann["id"] in pick:
            ann["segmentation"] = bad[pick[ann["id"]]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(coco))  # NaN as JSON's common extension, as Python writes it
    out = tmp_path / "out.json"
    args = ["--coco", str(path), "--images", str(clean.parent / "images"), "-o", str(out)]
    args += ["--device", "cpu", "--batch-size", "4", "--workers", "0"]
    script = _CLI_CHILD.format(limit=LIMIT_MEMORY)
    res = subprocess.run([sys.executable, "-c", script, "dataset", *args], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    warning = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith("dataset: warning: 7 annotations with a malformed"), res.stderr
    assert "ids 2, 5, 8, 12, 16, ...;" in warning[0] and "first: segmentation: polygon x = nan" in warning[0]
    assert "(7 malformed, not scored)" in res.stdout
    expected = json.loads(reference[0].read_text())["annotations"]
    for ours, ref in zip(json.loads(out.read_text())["annotations"], expected):
        if ours["id"] in pick:  # the same mask as with good ground truth; no IoU, the reason instead
            why = ours.pop("grabcut_gt_error")
            assert why.startswith("segmentation: ") and "\n" not in why, why
            del ref["grabcut_iou"]
        assert ours == ref
    assert not parts_dir(out).exists()


def test_a_failed_run_leaves_nothing_that_blocks_the_rerun(clean: Path, reference: tuple[Path, object], tmp_path):
    """A run that fails before its first chunk removes its parts folder; a folder without results is replaced."""
    images = clean.parent / "images"
    out = tmp_path / "out.json"
    coco = json.loads(clean.read_text())
    coco["images"][0]["height"] = 250  # found when the image is read, after the parts folder was made
    bad = tmp_path / "in.json"
    bad.write_text(json.dumps(coco))
    # --strict: stopped by that image (without it the image is marked and the job goes on)
    assert main(["dataset", *dataset_args(bad, images, out, "--device", "cpu", "--workers", "0", "--strict")]) == 2
    assert not parts_dir(out).exists()
    # A folder with a record of other settings and no finished image (left by an older version,
    # or a kill before the first chunk) does not refuse the corrected input either.
    pdir = parts_dir(out)
    pdir.mkdir()
    (pdir / "run.json").write_text(json.dumps({"format": 1, "input_sha256": "0" * 64, "max_iter": 9}))
    (pdir / "rank0.jsonl").write_bytes(b"")
    bad.write_text(clean.read_text())
    assert main(["dataset", *dataset_args(bad, images, out, "--device", "cpu", "--workers", "0")]) == 0
    assert out.read_bytes() == reference[0].read_bytes()


def test_output_that_is_the_input_is_refused(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    images = clean.parent / "images"
    (tmp_path / "sub").mkdir()
    coco = tmp_path / "in.json"
    coco.write_bytes(clean.read_bytes())
    (tmp_path / "link.json").symlink_to(coco)
    os.link(coco, tmp_path / "hard.json")
    for out in (coco, tmp_path / "sub" / ".." / "in.json", tmp_path / "link.json", tmp_path / "hard.json"):
        err = _one_line_error(capsys, ["dataset", *dataset_args(coco, images, out, "--device", "cpu")])
        assert "--output" in err and "input" in err, err
        assert coco.read_bytes() == clean.read_bytes() and not parts_dir(out).exists()
    err = _one_line_error(capsys, ["dataset", *dataset_args(tmp_path / "link.json", images, coco)])
    assert "--output" in err and "input" in err, err


def test_ids_are_integers_and_iscrowd_is_0_or_1(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """1, 1.0, true and "1" are one key to Python and different things to COCO: refused, named."""
    images = clean.parent / "images"
    out = tmp_path / "out.json"
    bad = tmp_path / "bad.json"
    for where, key, value, named in (
        ("annotations", "iscrowd", "0", "annotations[0] (id 1): iscrowd"),
        ("annotations", "iscrowd", 2, "annotations[0] (id 1): iscrowd"),
        ("annotations", "iscrowd", 1.0, "annotations[0] (id 1): iscrowd"),
        ("annotations", "iscrowd", None, "annotations[0] (id 1): iscrowd"),
        ("annotations", "image_id", True, "annotations[0] (id 1): image_id"),
        ("annotations", "image_id", 1.0, "annotations[0] (id 1): image_id"),
        ("annotations", "image_id", "1", "annotations[0] (id 1): image_id"),
        ("images", "id", 1.0, "images[0]: id"),
        ("images", "id", True, "images[0]: id"),
        ("images", "id", [1], "images[0]: id"),
    ):
        coco = json.loads(clean.read_text())
        coco[where][0][key] = value
        bad.write_text(json.dumps(coco))
        err = _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out, "--device", "cpu")])
        assert named in err and repr(value) in err, err
        assert not parts_dir(out).exists()
    # Sizes: positive whole numbers an image side can be (Python's JSON reader takes NaN,
    # Infinity and 1e999, and int() of the last two raised OverflowError).
    for key in ("height", "width"):
        for text in ("NaN", "Infinity", "-Infinity", "1e999", "1e300", "2147483648", "0", "-3", "2.5", '"240"', "true"):
            raw = clean.read_text()
            coco = json.loads(raw)
            coco["images"][0][key] = "@SIZE@"
            bad.write_text(json.dumps(coco).replace('"@SIZE@"', text))
            err = _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out, "--device", "cpu")])
            assert f"images[0]: expected a positive integer {key}" in err, (text, err)
            assert not parts_dir(out).exists()
    # An image id 1.0 beside an image id 1 used to be "appears twice"; a crowd flag "0" a crowd region.
    coco = json.loads(clean.read_text())
    coco["images"].append({**coco["images"][0], "id": 1.0})
    bad.write_text(json.dumps(coco))
    assert "images[8]: id: expected an integer, got 1.0" in _one_line_error(
        capsys, ["dataset", *dataset_args(bad, images, out)]
    )
    # true / false are taken as 1 / 0
    coco = json.loads(clean.read_text())
    for ann in coco["annotations"]:
        ann["iscrowd"] = bool(ann["iscrowd"])
    bad.write_text(json.dumps(coco))
    summary = run_dataset(DatasetOptions(bad, images, out, device="cpu", batch_size=4, workers=0, quiet=True))
    assert summary is not None and summary.skipped[SKIP_CROWD] == 2


# -- resuming ------------------------------------------------------------------------------------


def test_resume_after_a_kill(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(clean, clean.parent / "images", out)]
    args += ["--device", "cpu", "--batch-size", "2", "--workers", "1"]
    killed = run_module(hooked(args, exit_after=1), tmp_path)
    assert killed.returncode == 3, killed.stderr
    assert not out.exists()
    part = parts_dir(out) / "rank0.jsonl"
    first = part.read_text().splitlines()
    assert 0 < len(first) < 7
    resumed = run_module([a for a in args if a != "--quiet"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(first)} already done" in resumed.stdout
    assert f"this run: {7 - len(first)} images" in resumed.stdout
    assert out.read_bytes() == reference[0].read_bytes()


def test_resume_after_sigkill(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    """A real SIGKILL as soon as the first image is durable; the rerun equals an uninterrupted run."""
    out = tmp_path / "out.json"
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(clean, clean.parent / "images", out)]
    args += ["--device", "cpu", "--batch-size", "1", "--workers", "0"]  # a chunk of 4 boxes
    part = parts_dir(out) / "rank0.jsonl"
    proc = subprocess.Popen([sys.executable, *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (part.is_file() and part.stat().st_size > 0) and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    written = len(part.read_bytes().split(b"\n")) - 1
    assert 0 < written < 7 and not out.exists()
    resumed = run_module(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == reference[0].read_bytes()


def test_ctrl_c_stops_a_cpu_job_with_one_line_and_it_resumes(
    clean: Path, reference: tuple[Path, object], tmp_path: Path
) -> None:
    """SIGINT once the first chunk is durable: exit 130, one line, no traceback; a rerun finishes.

    The job holds after its first chunk (a test hook) instead of finishing, so the
    signal finds it running however fast or busy the machine: a job that ignored
    Ctrl-C would run into the timeout.
    """
    out = tmp_path / "out.json"
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(clean, clean.parent / "images", out)]
    args += ["--device", "cpu", "--batch-size", "1", "--workers", "0"]
    part = parts_dir(out) / "rank0.jsonl"
    proc = subprocess.Popen(
        [sys.executable, *hooked(args, block_after=1)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not (part.is_file() and part.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    message = err.decode()
    assert proc.returncode == 130, message
    assert "Traceback" not in message and message.strip().endswith("continues where it stopped"), message
    assert len(message.strip().splitlines()) == 1, message
    # the first chunk (batch size 1: the first image, whose 4 boxes make it) and nothing more
    assert len(part.read_bytes().splitlines()) == 1 and not out.exists()
    resumed = run_module(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == reference[0].read_bytes()


def test_resume_with_a_line_cut_short(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, keep_parts=True))
    part = parts_dir(out) / "rank0.jsonl"
    lines = part.read_bytes().splitlines(keepends=True)
    assert len(lines) == 7
    # the kill came in the middle of writing the fourth line
    part.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    out.unlink()
    summary = run_dataset(_opts(clean, out, keep_parts=True))
    assert summary is not None and summary.run_images == 4
    assert out.read_bytes() == reference[0].read_bytes()
    text = part.read_bytes()
    assert text.endswith(b"\n") and len(text.splitlines()) == 7  # the cut line was dropped, not glued to
    assert all(json.loads(line) for line in text.splitlines())


def test_resume_redoes_images_whose_lines_parse_but_are_not_whole(
    clean: Path, reference: tuple[Path, object], tmp_path: Path
) -> None:
    """A damaged or edited part file: a line that is JSON but not what the merge reads
    (a wrong annotation index, a missing or wrong field, no results) means the image is
    done again, not a crash or an output missing masks."""
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, keep_parts=True))
    part = parts_dir(out) / "rank0.jsonl"
    lines = [json.loads(line) for line in part.read_text().splitlines()]
    assert len(lines) == 7
    segmented = [rec for rec in lines if any("counts" in r for r in rec["results"])]
    assert len(segmented) >= 5

    def damaged(i: int) -> dict:
        rec = json.loads(json.dumps(segmented[i]))
        first = next(r for r in rec["results"] if "counts" in r)
        if i == 0:
            first["a"] = 10**9
        elif i == 1:
            del first["counts"]
        elif i == 2:
            rec["size"] = "x"
        elif i == 3:
            rec["results"] = []
        else:
            first["area"] = "big"
        return rec

    kept = [rec for rec in lines if rec not in segmented[:5]]
    part.write_text("".join(json.dumps(rec) + "\n" for rec in kept + [damaged(i) for i in range(5)]))
    out.unlink()
    summary = run_dataset(_opts(clean, out, keep_parts=True))
    assert summary is not None and summary.run_images == 5
    assert out.read_bytes() == reference[0].read_bytes()
    # Redone images have whole lines now, after the damaged ones: a third run does nothing.
    out.unlink()
    summary = run_dataset(_opts(clean, out))
    assert summary is not None and summary.run_images == 0
    assert out.read_bytes() == reference[0].read_bytes()


def test_a_damaged_run_record_is_one_line(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, keep_parts=True))
    out.unlink()
    for text in ("5", "[1, 2]", "null", '"x"', "{", "\xff"):
        (parts_dir(out) / "run.json").write_bytes(text.encode("latin-1"))
        args = ["dataset", *dataset_args(clean, clean.parent / "images", out, "--device", "cpu")]
        err = _one_line_error(capsys, args)
        assert "run.json is unreadable" in err and "delete" in err, (text, err)
        assert not out.exists()


def test_resume_with_other_settings_is_refused(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, keep_parts=True))
    out.unlink()
    rc = main(["dataset", *dataset_args(clean, clean.parent / "images", out, "--device", "cpu", "--margin", "0.2")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err and "margin" in err and "delete" in err


# -- torchrun ------------------------------------------------------------------------------------


def _torchrun(n: int, args: list[str], cwd: Path, env: dict[str, str] | None = None):
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}"]
    return run_module([*launcher, "-m", "torchgrabcut", "dataset", *args], cwd, env=env, timeout=240)


def test_torchrun_two_gloo_processes(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = [*dataset_args(clean, clean.parent / "images", out), "--device", "cpu", "--batch-size", "3"]
    res = _torchrun(2, [*args, "--workers", "0"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_bytes() == reference[0].read_bytes()
    # Killed with one process after a chunk, finished with two: still the same bytes.
    out.unlink()
    killed = run_module(hooked(["-m", "torchgrabcut", "dataset", *args, "--workers", "0"], exit_after=1), tmp_path)
    assert killed.returncode == 3
    res = _torchrun(2, [a for a in args if a != "--quiet"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "2 processes on cpu" in res.stdout and "already done" in res.stdout
    assert "waiting for other processes" in res.stdout  # rank 0's phases line
    assert out.read_bytes() == reference[0].read_bytes()


def test_group_waits_a_day_not_nccl_ten_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Processes that finish far apart must not hit the collective's default timeout."""
    import torch.distributed as dist

    from torchgrabcut.dataset import distributed

    seen: list[tuple[str, dict[str, object]]] = []
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: seen.append((backend, kw)))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    d, dev = distributed.join_group("cpu")
    assert (d.rank, d.world, d.joined_group, dev.type) == (1, 2, True, "cpu")
    assert (
        seen == [("gloo", {"timeout": distributed.GROUP_TIMEOUT})]
        and distributed.GROUP_TIMEOUT.total_seconds() >= 86400
    )


def test_resume_shares_out_what_is_left(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    """Parts holding every other image (one rank finished, one did not): both ranks of the rerun get work."""
    out = tmp_path / "out.json"
    run_dataset(_opts(clean, out, keep_parts=True))
    out.unlink()
    part = parts_dir(out) / "rank0.jsonl"
    lines = part.read_bytes().splitlines(keepends=True)  # one per image, in the file's order
    assert len(lines) >= 5
    part.write_bytes(b"".join(lines[::2]))
    args = [*dataset_args(clean, clean.parent / "images", out), "--device", "cpu", "--workers", "0", "--keep-parts"]
    res = _torchrun(2, args, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert out.read_bytes() == reference[0].read_bytes()
    left = len(lines) - len(lines[::2])
    new0 = len(part.read_bytes().splitlines()) - len(lines[::2])
    new1 = len((parts_dir(out) / "rank1.jsonl").read_bytes().splitlines())
    assert new0 + new1 == left and new0 == (left + 1) // 2 and new1 == left // 2


# -- errors and help -----------------------------------------------------------------------------


def _one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("torchgrabcut dataset: error: ") and "\n" not in err, err
    return err


def test_errors_are_one_line(clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    images = clean.parent / "images"
    out = tmp_path / "out.json"
    assert "no such file" in _one_line_error(capsys, ["dataset", *dataset_args(tmp_path / "x.json", images, out)])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "not valid JSON" in _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out)])
    bad.write_text(json.dumps({"images": []}))
    assert "'annotations'" in _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out)])
    assert "--images" in _one_line_error(capsys, ["dataset", *dataset_args(clean, tmp_path / "nowhere", out)])
    assert "--output" in _one_line_error(capsys, ["dataset", *dataset_args(clean, images, tmp_path / "a" / "o.json")])
    assert "--batch-size" in _one_line_error(
        capsys, ["dataset", *dataset_args(clean, images, out, "--batch-size", "0")]
    )
    coco = json.loads(clean.read_text())
    coco["annotations"][0]["image_id"] = 12345
    bad.write_text(json.dumps(coco))
    assert "12345" in _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out)])
    coco = json.loads(clean.read_text())
    coco["annotations"][2]["bbox"] = [1, 2, 3]
    bad.write_text(json.dumps(coco))
    assert "annotations[2]" in _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out)])
    # an image file that is missing, and one whose size is not what the file says
    coco = json.loads(clean.read_text())
    coco["images"][1]["file_name"] = "gone.png"
    bad.write_text(json.dumps(coco))
    assert "gone.png" in _one_line_error(capsys, ["dataset", *dataset_args(bad, images, out, "--device", "cpu")])
    assert not parts_dir(out).exists()  # a run that cannot start leaves nothing behind
    coco = json.loads(clean.read_text())
    coco["images"][1]["height"] = 250
    bad.write_text(json.dumps(coco))
    argv = ["dataset", *dataset_args(bad, images, out, "--device", "cpu", "--workers", "1", "--strict")]
    err = _one_line_error(capsys, argv)  # --strict: otherwise the image is marked, see test_pipeline.py
    assert "240x320" in err and "250x320" in err


def test_help_explains_every_option(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dataset", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--coco",
        "--images",
        "--output",
        "--device",
        "--batch-size",
        "--margin",
        "--min-margin",
        "--max-iter",
        "--workers",
        "--keep-gt",
        "--keep-parts",
        "--strict",
        "--allow-outside-images",
        "--quiet",
        "torchrun",
        "RLE",
        "grabcut_error",
        "Exit status: 0",
    ):
        assert option in text, option


# -- GrabCut-50 as a COCO file: the crop and margin cost little against whole images -------------


def test_grabcut50_as_coco(grabcut50: Path, tmp_path: Path) -> None:
    names = sorted(p.name for p in (grabcut50 / "images").iterdir())[::5]  # 10 of the 50
    coco = grabcut50_coco(grabcut50, names, tmp_path / "set")
    out = tmp_path / "out.json"
    summary = run_dataset(DatasetOptions(coco, tmp_path / "set" / "images", out, device="cpu", workers=1, quiet=True))
    assert summary is not None and summary.boxes == len(names) and summary.iou_count == len(names)
    # the reported mean IoU (pycocotools, gt = pixels of 255) against numpy on the decoded masks
    items = {it.name: it for it in load_dataset(tmp_path / "set")}
    res = json.loads(out.read_text())
    ours_iou, ours_score = [], []
    for im, ann in zip(res["images"], res["annotations"]):
        it = items[im["file_name"]]
        fg = decode_segmentation(ann["segmentation"], im["height"], im["width"])
        ours_iou.append(numpy_iou(fg, it.gt == 255))
        ours_score.append(score(fg, it.gt, it.box)[1])
    assert summary.iou_mean == pytest.approx(np.mean(ours_iou), abs=1e-9)
    # whole-image GrabCut on the same boxes, scored by evaluate.py (128 = unscored)
    whole = evaluate_dataset(tmp_path / "set", device="cpu", with_cv2=False).iou["torchgrabcut"]
    assert np.mean(ours_score) > np.mean(whole) - 0.02, (np.mean(ours_score), np.mean(whole))
    assert np.mean(ours_score) > 0.75


# -- CUDA (skipped here; run on the GPU machine) --------------------------------------------------


@requires_cuda
def test_cuda_gives_the_cpu_output(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    summary = run_dataset(_opts(clean, out, device="cuda", batch_size=64, workers=2))
    assert summary is not None and summary.device.startswith("cuda")
    assert out.read_bytes() == reference[0].read_bytes()


@requires_cuda
def test_torchrun_one_nccl_process(clean: Path, reference: tuple[Path, object], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = [*dataset_args(clean, clean.parent / "images", out), "--device", "cuda", "--batch-size", "64"]
    res = _torchrun(1, [a for a in args if a != "--quiet"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "1 process on cuda:0" in res.stdout
    assert out.read_bytes() == reference[0].read_bytes()


@pytest.mark.parametrize("host_only", [False, True])
def test_benchmark_smoke(tmp_path: Path, host_only: bool) -> None:
    args = [str(REPO / "bench" / "coco_bench.py"), "--images", "3", "--device", "cpu", "--workdir", str(tmp_path)]
    res = run_module(
        args + (["--host-only"] if host_only else []),
        tmp_path,
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    line = res.stdout.strip().splitlines()[-1]
    assert line.startswith("coco_bench: ") and f"boxes/s ({'host only' if host_only else 'cpu'})" in line
    # The stand-in's masks are the boxes themselves: their IoU with the drawn objects
    # is far below GrabCut's, so the stand-in really replaced it.
    iou = float(re.search(r"mean IoU vs ground truth: ([0-9.]+)", res.stdout).group(1))  # type: ignore[union-attr]
    assert (iou < 0.75) if host_only else (iou > 0.75), res.stdout


def test_missing_dependency_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchgrabcut.dataset.plan import require_dataset_deps

    monkeypatch.setitem(sys.modules, "pycocotools", None)  # import now fails as if not installed
    with pytest.raises(RuntimeError, match=r"pip install torchgrabcut\[dataset\]"):
        require_dataset_deps()
