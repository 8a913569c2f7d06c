"""The cv2.grabCut drop-in against OpenCV itself: on GrabCut-50 images, and over grids of arguments."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
import torch

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


# ---------------------------------------------------------------------------
# The same call through cv2.grabCut and through the drop-in, over enumerated
# grids of rects, masks, models, iteration counts and modes, on small images.
# The reference is cv2 itself: whether it raises, which arrays it writes in
# place, which it replaces by new ones, and the labels it gives.
# ---------------------------------------------------------------------------

H, W = 24, 30
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
Args = list  # [img, mask, rect, bgdModel, fgdModel, iterCount, mode]


def scene(h: int = H, w: int = W, seed: int = 0) -> np.ndarray:
    """A two-colour object on a background, with noise: every rect gives a clear answer."""
    rng = np.random.default_rng(seed)
    img = np.empty((h, w, 3), np.int16)
    img[:] = (40, 140, 210)
    img[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4] = (210, 70, 30)
    img += rng.integers(-25, 26, img.shape).astype(np.int16)
    return np.clip(img, 0, 255).astype(np.uint8)


IMG = scene()
RECT = (4, 3, 20, 16)


def readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def cv2_session() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A mask and models learnt by cv2 (rect mode, 2 iterations), for the GC_EVAL cases."""
    mask, bgd, fgd = np.zeros((H, W), np.uint8), np.zeros((1, 65)), np.zeros((1, 65))
    cv2.grabCut(IMG, mask, RECT, bgd, fgd, 2, cv2.GC_INIT_WITH_RECT)
    return mask, bgd, fgd


SESSION = cv2_session()


def snapshot(value: object) -> object:
    return value.copy() if isinstance(value, np.ndarray) else value


def same_array(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a is b or (not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray) and a == b)


def run_one(fn, args: Args) -> tuple[BaseException | None, tuple | None, list[object]]:  # type: ignore[no-untyped-def]
    outputs = [args[1], args[3], args[4]]
    before = [snapshot(a) for a in outputs]
    try:
        returned = tuple(fn(*args))
    except Exception as err:  # every error is compared with cv2's
        return err, None, before
    return None, returned, before


def covers_whole_image(rect: object, h: int, w: int) -> bool:
    """OpenCV's initMaskWithRect: x, y clamped to 0, then w, h clipped to the image (3x3 or larger)."""
    try:
        x, y, rw, rh = (int(v) for v in rect)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return False
    x, y = max(x, 0), max(y, 0)
    return min(h, w) >= 3 and (x, y, min(rw, w - x), min(rh, h - y)) == (0, 0, w, h)


def compare_with_cv2(make_args, label: str, *, exact: bool | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """Runs cv2.grabCut and the drop-in on fresh copies of the same arguments; returns the differences."""
    cv2.setRNGSeed(0)  # cv2's k-means draws from a global generator
    c_err, c_ret, _ = run_one(cv2.grabCut, (c_args := make_args()))
    t_err, t_ret, t_before = run_one(torchgrabcut.grabCut, (t_args := make_args()))
    t_outputs = [t_args[1], t_args[3], t_args[4]]
    c_outputs = [c_args[1], c_args[3], c_args[4]]
    problems: list[str] = []
    if t_err is not None:
        if not isinstance(t_err, cv2.error) or not isinstance(t_err, (ValueError, TypeError)):
            problems.append(
                f"{label}: the drop-in raised {type(t_err).__mro__}, not a cv2.error and ValueError/TypeError"
            )
        if not all(same_array(a, b) for a, b in zip(t_outputs, t_before)):
            problems.append(f"{label}: the drop-in raised {t_err!r} after writing into the caller's arrays")
    mode = t_args[6]
    if c_err is not None:
        image = t_args[0]
        if mode in (0, None) and isinstance(image, np.ndarray) and covers_whole_image(t_args[2], *image.shape[:2]):
            # Documented decision: a rect over the whole image takes the border as background.
            if t_err is not None:
                problems.append(f"{label}: a whole-image rect raised {t_err!r} (the border should be background)")
            elif t_ret is not None and (t_ret[0][0] != 0).any():
                problems.append(f"{label}: a whole-image rect left the first row out of the background")
            return problems
        if t_err is None:
            problems.append(f"{label}: cv2 raised {str(c_err).strip().splitlines()[-1]!r}, the drop-in returned")
        return problems
    if t_err is not None:
        problems.append(f"{label}: cv2 returned, the drop-in raised {t_err!r}")
        return problems
    assert c_ret is not None and t_ret is not None
    for i, name in enumerate(("mask", "bgdModel", "fgdModel")):
        c_same, t_same = c_ret[i] is c_outputs[i], t_ret[i] is t_outputs[i]
        if c_same != t_same:
            problems.append(f"{label}: {name}: cv2 returns the caller's array: {c_same}, the drop-in: {t_same}")
        if not t_same and not same_array(t_outputs[i], t_before[i]):
            problems.append(f"{label}: {name}: written into the caller's array, then a new array returned")
        kinds = [(type(r), getattr(r, "shape", None), getattr(r, "dtype", None)) for r in (c_ret[i], t_ret[i])]
        if kinds[0] != kinds[1]:
            problems.append(f"{label}: {name}: cv2 returns {kinds[0]}, the drop-in {kinds[1]}")
    if problems:
        return problems
    c_mask, t_mask = c_ret[0], t_ret[0]
    if isinstance(c_mask, np.ndarray) and c_mask.size:
        iters = t_args[5] or 0
        frozen = mode == cv2.GC_EVAL_FREEZE_MODEL
        must_equal = exact if exact is not None else (iters <= 0)
        differ = int((np.asarray(c_mask) != np.asarray(t_mask)).sum())
        if (must_equal and differ) or differ > 0.02 * c_mask.size:
            problems.append(f"{label}: masks differ in {differ} of {c_mask.size} pixels")
        untouched = mode in (cv2.GC_EVAL, cv2.GC_EVAL_FREEZE_MODEL) and (iters <= 0 or frozen)
        for i in (1, 2):
            if untouched and not same_array(c_ret[i], t_ret[i]):
                problems.append(f"{label}: model {i}: cv2 leaves it as given, the drop-in changed it")
            weights = np.asarray(t_ret[i]).reshape(-1)[:5]
            if not untouched and abs(weights.sum() - 1) > 1e-9:
                problems.append(f"{label}: model {i}: weights sum to {weights.sum()}, not 1 (stale model?)")
    return problems


def report(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} differences from cv2.grabCut:\n" + "\n".join(problems[:40])


SIGNS = [I32_MIN, -40, -5, -1, 0, 3, W - 1, W, W + 1, I32_MAX]
EXTENTS = [I32_MIN, -1, 0, 1, 5, W - 3, W, 100, I32_MAX]


def rect_call(rect: object, iters: int) -> Args:
    return [IMG, np.zeros((H, W), np.uint8), rect, np.zeros((1, 65)), np.zeros((1, 65)), iters, 0]


def test_rect_clipping_matches_cv2_for_every_sign_and_overflow() -> None:
    """(x, w) and (y, h) over negatives, zeros, the image edges and int32 limits, as OpenCV clips them.

    With 0 iterations the mask is the clipped rect itself (exact); a few cases also run an iteration.
    """
    problems: list[str] = []
    grid = [r for a in SIGNS for ext in EXTENTS for r in ((a, 3, ext, 15), (4, a, 20, ext))]
    for rect in grid:
        problems += compare_with_cv2(lambda rect=rect: rect_call(rect, 0), f"rect={rect} iters=0")
    extra = [
        (-10, -10, 40, 30),
        (-3, -3, 5, 5),
        (I32_MIN, I32_MIN, I32_MAX, I32_MAX),
        (-100, -100, 1000, 1000),
        (0, 0, W, H),
        (0, 0, W - 1, H),
        (1, 0, W, H),
        (10, 10, I32_MAX, I32_MAX),
        (W, H, 5, 5),
        (-5, -5, -5, -5),
        (5, 5, 0, 0),
        (I32_MAX, I32_MAX, I32_MAX, I32_MAX),
    ]
    for rect in extra:
        for iters in (0, 1):
            problems += compare_with_cv2(
                lambda rect=rect, iters=iters: rect_call(rect, iters), f"rect={rect} iters={iters}"
            )
    report(problems)


def test_issue_example_negative_origin_keeps_width_and_height() -> None:
    img = scene(40, 50)
    ours, theirs = np.zeros((40, 50), np.uint8), np.zeros((40, 50), np.uint8)
    args = ((-10, -10, 40, 30), np.zeros((1, 65)), np.zeros((1, 65)), 0, cv2.GC_INIT_WITH_RECT)
    cv2.grabCut(img, theirs, *args)
    torchgrabcut.grabCut(img, ours, *args)
    assert np.array_equal(ours, theirs)
    assert (ours[:30, :40] == cv2.GC_PR_FGD).all() and (ours[30:] == 0).all() and (ours[:, 40:] == 0).all()


RECT_VALUES: list[object] = [
    "5555",
    "abcd",
    b"\x04\x03\x14\x10",
    (5.0, 5, 10, 10),
    (4, 3, 20, 16.0),
    np.array([4.0, 3, 20, 16]),
    np.array([4, 3, 20, 16], np.float32),
    (True, 3, 20, 16),
    (np.bool_(True), 3, 20, 16),
    torch.tensor([4, 3, 20, 16]),
    {0: 4, 1: 3, 2: 20, 3: 16},
    (4, 3, 20),
    (4, 3, 20, 16, 1),
    (),
    [4, 3, 20, 16],
    np.array([4, 3, 20, 16]),
    np.array([4, 3, 20, 16], np.uint8),
    np.array([[4, 3, 20, 16]]),
    (np.int32(4), np.int64(3), 20, 16),
    (np.uint64(2**63), 3, 20, 16),
    (2**31, 3, 20, 16),
    (4, 3, 20, -(2**31) - 1),
    range(4, 8),
    np.array(5),
    5,
    None,
]


def test_rect_types_match_cv2_in_every_mode() -> None:
    """cv2 parses rect in every mode: a string, floats or a wrong length raise even where rect is unused."""
    mask, bgd, fgd = SESSION
    problems: list[str] = []
    for rect in RECT_VALUES:
        for mode in (0, 1, 2, 3):

            def make(rect=rect, mode=mode) -> Args:  # type: ignore[no-untyped-def]
                m = mask.copy() if mode else np.zeros((H, W), np.uint8)
                return [IMG, m, rect, bgd.copy(), fgd.copy(), 1, mode]

            problems += compare_with_cv2(make, f"rect={rect!r} mode={mode}")
    report(problems)


def mask_cases() -> dict[str, object]:
    """Mask layouts, each a function of the labels it should hold."""

    def f_order(m: np.ndarray) -> np.ndarray:
        return np.asfortranarray(m)

    def col_strided(m: np.ndarray) -> np.ndarray:
        out = np.zeros((H, 2 * W), np.uint8)[:, ::2]
        out[...] = m
        return out

    def row_strided(m: np.ndarray) -> np.ndarray:
        out = np.zeros((2 * H, W), np.uint8)[::2]
        out[...] = m
        return out

    def sub_view(m: np.ndarray) -> np.ndarray:
        out = np.zeros((H + 2, W + 3), np.uint8)[1:-1, 2:-1]
        out[...] = m
        return out

    def flipped(m: np.ndarray) -> np.ndarray:
        return m[::-1].copy()[::-1]

    return {
        "uint8": lambda m: m.copy(),
        "None": lambda m: None,
        "empty (0,)": lambda m: np.zeros((0,), np.uint8),
        "empty (0, 0)": lambda m: np.zeros((0, 0), np.uint8),
        "(H, W, 1)": lambda m: m[..., None].copy(),
        "(H, W, 3)": lambda m: np.repeat(m[..., None], 3, axis=2),
        "(1, H, W)": lambda m: m[None].copy(),
        "(W, H)": lambda m: np.zeros((W, H), np.uint8),
        "(H, W - 1)": lambda m: m[:, :-1].copy(),
        "(H * W,)": lambda m: m.reshape(-1).copy(),
        "int32": lambda m: m.astype(np.int32),
        "int8": lambda m: m.astype(np.int8),
        "bool": lambda m: m.astype(bool),
        "uint16": lambda m: m.astype(np.uint16),
        "float64": lambda m: m.astype(np.float64),
        "int64": lambda m: m.astype(np.int64),
        "uint64": lambda m: m.astype(np.uint64),
        "complex64": lambda m: m.astype(np.complex64),
        "Fortran": f_order,
        "column-strided": col_strided,
        "row-strided": row_strided,
        "sub-view": sub_view,
        "flipped": flipped,
        "read-only": lambda m: readonly(m.copy()),
        "list": lambda m: m.tolist(),
        "scalar 0": lambda m: 0,
        "scalar 2.5": lambda m: 2.5,
        "scalar True": lambda m: True,
        "numpy scalar": lambda m: np.int64(0),
        "int past C long": lambda m: 2**70,
        "labels 0..4": lambda m: np.where(m == 0, 4, m).astype(np.uint8),
    }


def test_mask_layouts_match_cv2_in_every_mode() -> None:
    """None, empty, wrong shape or dtype, odd layouts: cv2 reallocates, writes in place or raises; so do we."""
    session_mask, bgd, fgd = SESSION
    init_mask = np.zeros((H, W), np.uint8)
    init_mask[3:19, 4:24] = cv2.GC_PR_FGD
    problems: list[str] = []
    for name, layout in mask_cases().items():
        for mode in (0, 1, 2, 3):
            for iters in (0, 1):
                labels = {0: np.zeros((H, W), np.uint8), 1: init_mask}.get(mode, session_mask)

                def make(layout=layout, labels=labels, mode=mode, iters=iters) -> Args:  # type: ignore[no-untyped-def]
                    return [IMG, layout(labels), RECT, bgd.copy(), fgd.copy(), iters, mode]

                problems += compare_with_cv2(make, f"mask {name} mode={mode} iters={iters}")
    report(problems)


def model_cases() -> dict[str, object]:
    """Model layouts, each a function of the 65 values it should hold."""

    def strided(v: np.ndarray) -> np.ndarray:
        out = np.zeros((1, 130))[:, ::2]
        out[...] = v
        return out

    def row_view(v: np.ndarray) -> np.ndarray:
        out = np.zeros((2, 65))[::2]
        out[...] = v
        return out

    def singular(v: np.ndarray) -> np.ndarray:
        out = np.zeros((1, 65))
        out[0, 0] = 1.0  # a weighted component whose covariance is zero
        return out

    def nan_weight(v: np.ndarray) -> np.ndarray:
        out = v.copy()
        out[0, 4] = np.nan
        return out

    return {
        "(1, 65) float64": lambda v: v.copy(),
        "None": lambda v: None,
        "empty (0,)": lambda v: np.zeros((0,)),
        "empty (1, 0)": lambda v: np.zeros((1, 0)),
        "empty float32": lambda v: np.zeros((0,), np.float32),
        "(65,)": lambda v: v.reshape(65).copy(),
        "(1, 65, 1)": lambda v: v.reshape(1, 65, 1).copy(),
        "(65, 1)": lambda v: v.reshape(65, 1).copy(),
        "(5, 13)": lambda v: v.reshape(5, 13).copy(),
        "(5, 13) Fortran": lambda v: np.asfortranarray(v.reshape(5, 13)),
        "(13, 5)": lambda v: v.reshape(13, 5).copy(),
        "(1, 1, 65)": lambda v: v.reshape(1, 1, 65).copy(),
        "(1, 64)": lambda v: v[:, :64].copy(),
        "(1, 66)": lambda v: np.concatenate([v, [[0.0]]], axis=1),
        "float32": lambda v: v.astype(np.float32),
        "int32": lambda v: v.astype(np.int32),
        "int64": lambda v: v.astype(np.int64),
        "column-strided": strided,
        "row view": row_view,
        "read-only": lambda v: readonly(v.copy()),
        "list": lambda v: v.reshape(-1).tolist(),
        "scalar 0.0": lambda v: 0.0,
        "singular covariance": singular,
        "NaN weight": nan_weight,
    }


def test_model_layouts_match_cv2_in_every_mode() -> None:
    """float32, (5, 13), Fortran, strided, wrong sizes: cv2 raises or writes in place; never a stale model here."""
    session_mask, bgd, fgd = SESSION
    problems: list[str] = []
    for name, layout in model_cases().items():
        for mode in (0, 1, 2, 3):
            for iters in (0, 1):
                for which in (3, 4) if (mode, iters) == (0, 0) else (3,):
                    zero_model_eval = (
                        mode in (2, 3)
                        and iters > 0
                        and name in ("None", "empty (0,)", "empty (1, 0)", "empty float32", "singular covariance")
                    )
                    if zero_model_eval or (name == "NaN weight" and mode in (2, 3) and iters > 0):
                        continue  # GC_EVAL from an empty class, or NaN: below (decisions and item 5)

                    def make(layout=layout, mode=mode, iters=iters, which=which) -> Args:  # type: ignore[no-untyped-def]
                        mask = session_mask.copy() if mode else np.zeros((H, W), np.uint8)
                        if mode == 1:
                            mask[mask == cv2.GC_PR_BGD] = cv2.GC_BGD
                        args: Args = [IMG, mask, RECT, bgd.copy(), fgd.copy(), iters, mode]
                        args[which] = layout(args[which])
                        return args

                    problems += compare_with_cv2(
                        make, f"{'bgd' if which == 3 else 'fgd'}Model {name} mode={mode} iters={iters}"
                    )
    report(problems)


def test_float32_and_odd_model_layouts_raise_or_are_written_in_place() -> None:
    """Item 7 of issue 18: the caller's models are never left stale after a call that returns."""
    for layout in ("float32", "(5, 13) Fortran", "(5, 13)", "column-strided"):
        bgd = model_cases()[layout](np.zeros((1, 65)))  # type: ignore[operator]
        with pytest.raises(cv2.error):
            cv2.grabCut(IMG, np.zeros((H, W), np.uint8), RECT, bgd, np.zeros((1, 65)), 1, cv2.GC_INIT_WITH_RECT)
        with pytest.raises((ValueError, TypeError)):
            torchgrabcut.grabCut(
                IMG, np.zeros((H, W), np.uint8), RECT, bgd, np.zeros((1, 65)), 1, torchgrabcut.GC_INIT_WITH_RECT
            )
        assert not np.asarray(bgd).any()
    for layout in ("(65,)", "(1, 65, 1)", "row view"):
        bgd = model_cases()[layout](np.zeros((1, 65)))  # type: ignore[operator]
        _, out, _ = torchgrabcut.grabCut(
            IMG, np.zeros((H, W), np.uint8), RECT, bgd, np.zeros((1, 65)), 1, torchgrabcut.GC_INIT_WITH_RECT
        )
        assert out is bgd and abs(bgd.reshape(-1)[:5].sum() - 1) < 1e-9


ITER_VALUES: list[object] = [
    None,
    0,
    -1,
    I32_MIN,
    1,
    np.int64(1),
    np.int32(2),
    1.0,
    np.float64(1),
    True,
    "1",
    2**31,
    -(2**31) - 1,
]
MODE_VALUES: list[object] = [None, 0, 1, 2, 3, 4, -1, np.int64(2), 2.0, True, 2**31, "0"]


def test_iter_count_and_mode_values_match_cv2() -> None:
    session_mask, bgd, fgd = SESSION
    problems: list[str] = []
    for iters in ITER_VALUES:
        for mode in MODE_VALUES:

            def make(iters=iters, mode=mode) -> Args:  # type: ignore[no-untyped-def]
                return [IMG, session_mask.copy(), RECT, bgd.copy(), fgd.copy(), iters, mode]

            problems += compare_with_cv2(make, f"iterCount={iters!r} mode={mode!r}")
    report(problems)


IMAGE_VALUES: dict[str, object] = {
    "(H, W, 4)": np.zeros((H, W, 4), np.uint8),
    "(H, W)": IMG[..., 0].copy(),
    "float32": IMG.astype(np.float32),
    "int64": IMG.astype(np.int64),
    "RGB view": IMG[:, :, ::-1],
    "Fortran": np.asfortranarray(IMG),
    "empty": np.zeros((0, 0, 3), np.uint8),
    "list": IMG.tolist(),
    "read-only": readonly(IMG.copy()),
}


def test_image_values_match_cv2() -> None:
    session_mask, bgd, fgd = SESSION
    problems: list[str] = []
    for name, img in IMAGE_VALUES.items():
        for mode in (0, 2):

            def make(img=img, mode=mode) -> Args:  # type: ignore[no-untyped-def]
                return [img, session_mask.copy(), RECT, bgd.copy(), fgd.copy(), 1, mode]

            problems += compare_with_cv2(make, f"img {name} mode={mode}")
    report(problems)


def test_tiny_images_match_cv2() -> None:
    """One pixel (cv2: nothing to learn the background from), two by two, one row with a 1-D mask."""
    problems: list[str] = []
    row = scene(1, W)
    one_d = np.zeros((W,), np.uint8)
    one_d[5:15] = cv2.GC_PR_FGD
    cases: list[tuple[str, object]] = [
        ("1x1", lambda: [IMG[:1, :1].copy(), None, (0, 0, 1, 1), None, None, 1, 0]),
        ("2x2", lambda: [IMG[:2, :2].copy(), None, (0, 0, 1, 1), None, None, 0, 0]),
        ("1 row, 1-D mask, rect", lambda: [row, np.zeros((W,), np.uint8), (5, 0, 10, 1), None, None, 0, 0]),
        ("1 row, 1-D mask, mask", lambda: [row, one_d.copy(), None, None, None, 0, 1]),
    ]
    for name, make in cases:
        problems += compare_with_cv2(make, name)
    report(problems)


def test_eval_with_empty_models_and_no_iterations_matches_cv2() -> None:
    """GC_EVAL and GC_EVAL_FREEZE_MODEL with 0 iterations: cv2 allocates empty models and touches nothing else."""
    problems: list[str] = []
    for mode in (2, 3):
        for mask in ("None", "uint8", "int32", "labels 0..4"):

            def make(mode=mode, mask=mask) -> Args:  # type: ignore[no-untyped-def]
                return [IMG, mask_cases()[mask](SESSION[0]), None, None, np.zeros((0,)), 0, mode]  # type: ignore[operator]

            problems += compare_with_cv2(make, f"mode={mode} mask {mask} models None/empty")
    report(problems)


def test_eval_with_empty_models_learns_from_the_mask_as_cv2() -> None:
    """cv2 in GC_EVAL with None or zero models: every pixel takes component 0, then both mixtures are learnt."""
    problems: list[str] = []
    for bgd, fgd in ((None, None), (np.zeros((1, 65)), np.zeros((1, 65))), (None, SESSION[2])):

        def make(bgd=bgd, fgd=fgd) -> Args:  # type: ignore[no-untyped-def]
            return [IMG, SESSION[0].copy(), None, snapshot(bgd), snapshot(fgd), 2, cv2.GC_EVAL]

        problems += compare_with_cv2(make, f"GC_EVAL bgd={type(bgd).__name__} fgd={type(fgd).__name__}")
    if problems and all("every class needs a component" in p for p in problems):
        pytest.xfail("needs item 5 of issue 18 (GC_EVAL with an empty class, in torchgrabcut.api)")
    report(problems)


def test_freeze_with_an_empty_class_raises() -> None:
    """Decision: cv2 runs GC_EVAL_FREEZE_MODEL with an empty class on infinite t-links; here it raises."""
    mask = SESSION[0].copy()
    cv2.grabCut(IMG, mask.copy(), None, None, None, 1, cv2.GC_EVAL_FREEZE_MODEL)
    before = mask.copy()
    with pytest.raises(cv2.error) as info:
        torchgrabcut.grabCut(IMG, mask, None, None, None, 1, torchgrabcut.GC_EVAL_FREEZE_MODEL)
    assert isinstance(info.value, ValueError) and np.array_equal(mask, before)


def test_mask_none_in_rect_mode_is_allocated_as_cv2_does() -> None:
    """Item 8: mask None, int32 or of another shape in rect mode: a new uint8 mask, the caller's untouched."""
    for mask in (None, np.zeros((H, W), np.int32), np.zeros((W, H), np.uint8)):
        before = snapshot(mask)
        out, bgd, fgd = torchgrabcut.grabCut(IMG, mask, RECT, None, None, 1, torchgrabcut.GC_INIT_WITH_RECT)
        ref = cv2.grabCut(IMG, snapshot(mask), RECT, None, None, 1, cv2.GC_INIT_WITH_RECT)[0]
        assert out is not mask and out.dtype == np.uint8 and out.shape == (H, W)
        assert same_array(mask, before) and (out != ref).mean() < 0.02
        assert bgd.shape == (1, 65) and fgd.shape == (1, 65)


def test_errors_are_cv2_errors_and_builtin_errors() -> None:
    """Item 9: code written for cv2 catches cv2.error; code written for this library catches ValueError/TypeError."""
    calls = [
        (IMG, np.zeros((H, W), np.uint8), "5555", None, None, 1, 0),
        (IMG, np.zeros((H, W), np.uint8), RECT, np.zeros((1, 65), np.float32), None, 1, 0),
        (IMG, np.zeros((H, W), np.uint8), (0, 0, 0, 0), None, None, 1, 0),
        (IMG.astype(np.float32), None, RECT, None, None, 1, 0),
        (IMG, np.full((H, W), 7, np.uint8), None, None, None, 1, 1),
    ]
    for args in calls:
        with pytest.raises(cv2.error):
            cv2.grabCut(*args)
        with pytest.raises(cv2.error) as info:
            torchgrabcut.grabCut(*args)
        err = info.value
        assert isinstance(err, (ValueError, TypeError)), type(err).__mro__
        assert str(err) and err.code == -5 and err.func == "grabCut" and err.msg == str(err)  # type: ignore[attr-defined]
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err)


def test_errors_are_plain_builtin_errors_without_cv2(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchgrabcut import cv2_compat

    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 now raises ImportError
    cv2_compat._error_types.cache_clear()
    try:
        with pytest.raises(ValueError) as value_info:
            torchgrabcut.grabCut(IMG, None, (0, 0, 0, 0), None, None, 1, 0)
        with pytest.raises(TypeError) as type_info:
            torchgrabcut.grabCut(IMG, None, "5555", None, None, 1, 0)
        assert type(value_info.value) is ValueError and type(type_info.value) is TypeError
    finally:
        cv2_compat._error_types.cache_clear()


def test_the_library_is_called_with_its_default_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drop-in hands the caller's numpy image to torchgrabcut.grabcut with device=None, as a user's call would."""
    from torchgrabcut import cv2_compat

    seen: list[dict] = []
    real = cv2_compat.grabcut

    def spy(image, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append({"image": image, **kwargs})
        return real(image, *args, **kwargs)

    monkeypatch.setattr(cv2_compat, "grabcut", spy)
    img = IMG.copy()
    for mode in (0, 1, 2, 3):
        mask = SESSION[0].copy() if mode else np.zeros((H, W), np.uint8)
        torchgrabcut.grabCut(img, mask, RECT, SESSION[1].copy(), SESSION[2].copy(), 1, mode)
    assert len(seen) == 4
    assert all(call["image"] is img and call.get("device", None) is None for call in seen)
