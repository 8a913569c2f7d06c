"""bench/photo_coco.py: the dataset job's set over real photos (issue 33's dataset goal)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("pycocotools")
from bench_scripts import load_bench_script
from pycocotools import mask as mask_utils


def load_script() -> ModuleType:
    return load_bench_script("photo_coco")


def fake_photos(root: Path) -> dict[str, np.ndarray]:
    """Two photos laid out as GrabCut-50 is (255 object, 128 band, 0 background), one without an object."""
    (root / "images").mkdir(parents=True)
    (root / "gt").mkdir()
    rng = np.random.default_rng(5)
    objects = {}
    for name, (h, w), box in (("a", (120, 160), (30, 20, 90, 100)), ("b", (80, 60), None)):
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / "images" / f"{name}.jpg")
        gt = np.zeros((h, w), np.uint8)
        if box is not None:
            y0, x0, y1, x1 = box
            gt[y0 - 2 : y1 + 2, x0 - 2 : x1 + 2] = 128  # the unknown band is not the object
            gt[y0:y1, x0:x1] = 255
        Image.fromarray(gt).save(root / "gt" / f"{name}.png")
        objects[name] = gt == 255
    (root / "images" / "notes.txt").write_text("not an image")
    return objects


def test_boxes_jitter_around_the_object_and_the_ground_truth_is_its_mask(tmp_path: Path) -> None:
    objects = fake_photos(tmp_path / "photos")
    path = load_script().make_photo_coco(tmp_path / "photos", tmp_path / "out", boxes_per_photo=25, seed=1)
    coco = json.loads(path.read_text())
    # The photo without an object gets no annotation and no image entry.
    assert [im["file_name"] for im in coco["images"]] == ["a.jpg"]
    assert (coco["images"][0]["height"], coco["images"][0]["width"]) == (120, 160)
    anns = coco["annotations"]
    assert len(anns) == 25 and len({a["id"] for a in anns}) == 25
    boxes = np.array([a["bbox"] for a in anns])
    # Within the image, at least 8 px a side, jittered (not all equal), around the object's box.
    assert (boxes[:, 0] >= 0).all() and (boxes[:, 1] >= 0).all()
    assert (boxes[:, 0] + boxes[:, 2] <= 160 + 1e-6).all() and (boxes[:, 1] + boxes[:, 3] <= 120 + 1e-6).all()
    assert (boxes[:, 2] >= 8).all() and (boxes[:, 3] >= 8).all()
    assert len({tuple(b) for b in boxes.tolist()}) > 1
    centre = boxes[:, :2] + boxes[:, 2:] / 2
    assert np.allclose(np.median(centre, axis=0), (60, 60), atol=10)
    for a in anns:
        decoded = mask_utils.decode({"size": a["segmentation"]["size"], "counts": a["segmentation"]["counts"].encode()})
        np.testing.assert_array_equal(decoded.astype(bool), objects["a"])
        assert a["area"] == objects["a"].sum()


def test_the_same_seed_gives_the_same_file(tmp_path: Path) -> None:
    fake_photos(tmp_path / "photos")
    make = load_script().make_photo_coco
    first = make(tmp_path / "photos", tmp_path / "one", boxes_per_photo=3, seed=7).read_text()
    assert make(tmp_path / "photos", tmp_path / "two", boxes_per_photo=3, seed=7).read_text() == first
    assert make(tmp_path / "photos", tmp_path / "three", boxes_per_photo=3, seed=8).read_text() != first


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"boxes_per_photo": 0}, "boxes_per_photo"),
        ({"jitter": float("nan")}, "jitter"),
        ({"jitter": -0.1}, "jitter"),
        ({"jitter": 2.0}, "jitter"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, kwargs: dict[str, float], message: str) -> None:
    fake_photos(tmp_path / "photos")
    with pytest.raises(ValueError, match=message):
        load_script().make_photo_coco(tmp_path / "photos", tmp_path / "out", **kwargs)


def test_a_folder_without_photos_is_refused(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    with pytest.raises(FileNotFoundError, match=r"gt/NAME\.png"):
        load_script().make_photo_coco(tmp_path, tmp_path / "out")


def test_a_ground_truth_of_another_size_is_refused(tmp_path: Path) -> None:
    fake_photos(tmp_path / "photos")
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(tmp_path / "photos" / "gt" / "a.png")
    with pytest.raises(ValueError, match=r"a\.png"):
        load_script().make_photo_coco(tmp_path / "photos", tmp_path / "out")
