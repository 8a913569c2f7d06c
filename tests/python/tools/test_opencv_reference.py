"""cv2.grabCut as the tools run it: reseeded, its mask depends on the image alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import write_tiny_dataset
from torchgrabcut.data import BUNDLED_IMAGE
from torchgrabcut.imageio import read_image
from torchgrabcut.tools.evaluate import evaluate_dataset
from torchgrabcut.tools.opencv_reference import cv2_grabcut_box

cv2 = pytest.importorskip("cv2")


def test_a_seeded_call_ignores_what_ran_before() -> None:
    img = cv2.resize(read_image(BUNDLED_IMAGE), (400, 400), interpolation=cv2.INTER_AREA)
    box = (50, 50, 300, 300)
    first = cv2_grabcut_box(cv2, img, box, 3, seed=7)
    for _ in range(2):  # unseeded calls move OpenCV's generator on
        cv2_grabcut_box(cv2, img, box, 3)
    again = cv2_grabcut_box(cv2, img, box, 3, seed=7)
    assert np.array_equal(first, again)
    assert set(np.unique(first).tolist()) <= {0, 2, 3}  # rect mode: BGD outside, probable labels inside
    assert (first[50:300, 50:300] & 1).any() and not (first[:50] & 1).any()


def test_evaluation_with_a_cv2_seed_is_repeatable(tmp_path: Path) -> None:
    write_tiny_dataset(tmp_path / "ds")
    runs = [evaluate_dataset(tmp_path / "ds", device="cpu", max_iter=2, cv2_seed=3) for _ in range(2)]
    assert runs[0].iou["cv2.grabCut"] == runs[1].iou["cv2.grabCut"]
    for a, b in zip(runs[0].foregrounds["cv2.grabCut"], runs[1].foregrounds["cv2.grabCut"]):
        assert np.array_equal(a, b)
    assert min(runs[0].iou["cv2.grabCut"]) > 0.8  # a real segmentation of the bright object, not an empty mask
