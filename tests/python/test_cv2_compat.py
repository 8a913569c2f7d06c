"""The cv2.grabCut drop-in against OpenCV itself, on GrabCut-50 images."""

from __future__ import annotations

import numpy as np
import pytest

import torchgrabcut
from torchgrabcut import GrabCutModel

cv2 = pytest.importorskip("cv2")


def fg_iou(a: np.ndarray, b: np.ndarray) -> float:
    fa, fb = (a & 1).astype(bool), (b & 1).astype(bool)
    return float((fa & fb).sum() / max(int((fa | fb).sum()), 1))


def rect_of(item) -> tuple[int, int, int, int]:  # type: ignore[no-untyped-def]
    x0, y0, x1, y1 = item.box
    return (x0, y0, x1 - x0, y1 - y0)


def test_signature_and_in_place_semantics(dataset_items: list) -> None:
    item = dataset_items[0]
    mask = np.zeros(item.gt.shape, np.uint8)
    bgd, fgd = np.zeros((1, 65)), np.zeros((1, 65))
    out = torchgrabcut.grabCut(
        item.image, mask, rect_of(item), bgd, fgd, 2, torchgrabcut.GC_INIT_WITH_RECT, device="cpu"
    )
    assert out[0] is mask and out[1] is bgd and out[2] is fgd
    assert mask.any() and bgd.any() and fgd.any()
    assert abs(bgd[0, :5].sum() - 1) < 1e-9 and abs(fgd[0, :5].sum() - 1) < 1e-9


def test_masks_agree_with_cv2(dataset_items: list) -> None:
    ious = []
    for item in dataset_items[:6]:
        ours = np.zeros(item.gt.shape, np.uint8)
        theirs = np.zeros(item.gt.shape, np.uint8)
        torchgrabcut.grabCut(
            item.image,
            ours,
            rect_of(item),
            np.zeros((1, 65)),
            np.zeros((1, 65)),
            5,
            torchgrabcut.GC_INIT_WITH_RECT,
            device="cpu",
        )
        cv2.grabCut(item.image, theirs, rect_of(item), np.zeros((1, 65)), np.zeros((1, 65)), 5, cv2.GC_INIT_WITH_RECT)
        ious.append(fg_iou(ours, theirs))
    assert np.mean(ious) > 0.9, ious


def test_continue_a_cv2_session_and_back(dataset_items: list) -> None:
    """A model learnt by cv2 continues here (GC_EVAL), and ours continues in cv2."""
    item = dataset_items[1]
    rect = rect_of(item)
    mask = np.zeros(item.gt.shape, np.uint8)
    bgd, fgd = np.zeros((1, 65)), np.zeros((1, 65))
    cv2.grabCut(item.image, mask, rect, bgd, fgd, 2, cv2.GC_INIT_WITH_RECT)
    model = GrabCutModel.from_cv2(bgd, fgd)
    assert np.array_equal(model.to_cv2()[0], bgd) and np.array_equal(model.to_cv2()[1], fgd)

    ours, theirs = mask.copy(), mask.copy()
    b1, f1, b2, f2 = bgd.copy(), fgd.copy(), bgd.copy(), fgd.copy()
    torchgrabcut.grabCut(item.image, ours, None, b1, f1, 2, torchgrabcut.GC_EVAL, device="cpu")
    cv2.grabCut(item.image, theirs, None, b2, f2, 2, cv2.GC_EVAL)
    assert fg_iou(ours, theirs) > 0.95
    # Learnt weights agree closely: same pixels, same components, same formulas.
    assert np.allclose(b1[0, :5].sum(), 1.0) and np.abs(np.sort(b1[0, :5]) - np.sort(b2[0, :5])).max() < 0.1

    back = ours.copy()
    cv2.grabCut(item.image, back, None, b1, f1, 1, cv2.GC_EVAL)
    assert fg_iou(back, ours) > 0.95


def test_freeze_mode_matches_cv2(dataset_items: list) -> None:
    item = dataset_items[2]
    mask = np.zeros(item.gt.shape, np.uint8)
    bgd, fgd = np.zeros((1, 65)), np.zeros((1, 65))
    cv2.grabCut(item.image, mask, rect_of(item), bgd, fgd, 3, cv2.GC_INIT_WITH_RECT)
    ours, theirs = mask.copy(), mask.copy()
    b1, f1 = bgd.copy(), fgd.copy()
    torchgrabcut.grabCut(item.image, ours, None, b1, f1, 1, torchgrabcut.GC_EVAL_FREEZE_MODEL, device="cpu")
    cv2.grabCut(item.image, theirs, None, bgd.copy(), fgd.copy(), 1, cv2.GC_EVAL_FREEZE_MODEL)
    assert np.array_equal(b1, bgd) and np.array_equal(f1, fgd)
    assert fg_iou(ours, theirs) > 0.97


def test_init_with_mask_mode(dataset_items: list) -> None:
    item = dataset_items[3]
    x0, y0, x1, y1 = item.box
    mask = np.zeros(item.gt.shape, np.uint8)
    mask[y0:y1, x0:x1] = cv2.GC_PR_FGD
    by_mask = mask.copy()
    torchgrabcut.grabCut(
        item.image,
        by_mask,
        None,
        np.zeros((1, 65)),
        np.zeros((1, 65)),
        3,
        torchgrabcut.GC_INIT_WITH_MASK,
        device="cpu",
    )
    by_rect = np.zeros_like(mask)
    torchgrabcut.grabCut(
        item.image,
        by_rect,
        rect_of(item),
        np.zeros((1, 65)),
        np.zeros((1, 65)),
        3,
        torchgrabcut.GC_INIT_WITH_RECT,
        device="cpu",
    )
    assert np.array_equal(by_mask, by_rect)


def test_whole_image_rect_does_not_raise(dataset_items: list) -> None:
    item = next(it for it in dataset_items if it.name.startswith("cross"))
    h, w = item.gt.shape
    with pytest.raises(cv2.error):
        cv2.grabCut(
            item.image,
            np.zeros((h, w), np.uint8),
            (0, 0, w, h),
            np.zeros((1, 65)),
            np.zeros((1, 65)),
            1,
            cv2.GC_INIT_WITH_RECT,
        )
    mask = np.zeros((h, w), np.uint8)
    torchgrabcut.grabCut(
        item.image,
        mask,
        (0, 0, w, h),
        np.zeros((1, 65)),
        np.zeros((1, 65)),
        5,
        torchgrabcut.GC_INIT_WITH_RECT,
        device="cpu",
    )
    fg = (mask & 1).astype(bool)
    truth = item.gt > 128
    scored = item.gt != 128
    iou = (fg & truth & scored).sum() / ((fg | truth) & scored).sum()
    # The border is taken as background; the rest is a real segmentation, not all or nothing.
    assert np.all(mask[0] == 0) and np.all(mask[:, -1] == 0)
    assert 0.1 < fg.mean() < 0.9 and iou > 0.25, (fg.mean(), iou)
