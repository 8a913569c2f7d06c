"""The Python API: types in and out, batches, modes, determinism, inputs left intact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut
from conftest import object_image
from torchgrabcut import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD, GrabCutModel, grabcut

BOX = (15, 10, 60, 50)


@pytest.fixture
def image() -> np.ndarray:
    return object_image(np.random.default_rng(1), 60, 80, BOX)


def test_numpy_in_numpy_out_and_labels(image: np.ndarray) -> None:
    mask = grabcut(image, box=BOX, device="cpu")
    assert isinstance(mask, np.ndarray) and mask.dtype == np.uint8 and mask.shape == (60, 80)
    outside = np.ones_like(mask, dtype=bool)
    outside[10:50, 15:60] = False
    assert np.all(mask[outside] == GC_BGD)
    inside = mask[10:50, 15:60]
    assert set(np.unique(inside)) <= {GC_PR_BGD, GC_PR_FGD}
    assert 0 < (inside == GC_PR_FGD).sum() < inside.size


def test_tensor_in_tensor_out(image: np.ndarray) -> None:
    t = torch.from_numpy(image).permute(2, 0, 1)  # non-contiguous (3, H, W)
    assert not t.is_contiguous()
    mask = grabcut(t, box=BOX)
    assert isinstance(mask, torch.Tensor) and mask.shape == (60, 80) and mask.device.type == "cpu"
    assert np.array_equal(mask.numpy(), grabcut(image, box=BOX, device="cpu"))


def test_batch_equals_single_images() -> None:
    rng = np.random.default_rng(2)
    boxes = [(5, 5, 40, 35), (10, 3, 45, 30), (0, 0, 30, 40)]
    imgs = [object_image(rng, 40, 50, b) for b in boxes]
    batch = torch.stack([torch.from_numpy(i).permute(2, 0, 1) for i in imgs])
    out = grabcut(batch, box=torch.tensor(boxes))
    assert out.shape == (3, 40, 50)
    for b in range(3):
        assert np.array_equal(out[b].numpy(), grabcut(imgs[b], box=boxes[b], device="cpu"))


def test_list_of_sizes_equals_single_images() -> None:
    rng = np.random.default_rng(3)
    boxes = [(3, 3, 35, 25), (2, 5, 20, 40), (5, 2, 50, 15)]
    imgs = [object_image(rng, h, w, b) for (h, w), b in zip([(30, 40), (45, 25), (17, 61)], boxes)]
    out = grabcut(imgs, box=boxes, device="cpu")
    assert isinstance(out, list) and len(out) == 3
    for img, box, m in zip(imgs, boxes, out):
        assert m.shape == img.shape[:2]
        assert np.array_equal(m, grabcut(img, box=box, device="cpu"))


def test_views_and_read_only_arrays(image: np.ndarray, recwarn: pytest.WarningsRecorder) -> None:
    """Crop views (used in place), flipped views (copied) and read-only arrays give the
    masks of their contiguous copies, without a warning."""
    big = np.zeros((90, 120, 3), np.uint8)
    big[15:75, 20:100] = image
    crop = big[15:75, 20:100]  # positive strides, rows longer than the crop
    flipped = image[:, ::-1]
    frozen = image.copy()
    frozen.setflags(write=False)
    frozen_mask = np.full(image.shape[:2], GC_BGD, np.uint8)
    frozen_mask[10:50, 15:60] = GC_PR_FGD
    frozen_mask.setflags(write=False)
    ref = grabcut(image, box=BOX, device="cpu")
    assert np.array_equal(grabcut(crop, box=BOX, device="cpu"), ref)
    assert np.array_equal(grabcut(frozen, box=BOX, device="cpu"), ref)
    assert np.array_equal(grabcut(frozen, frozen_mask, device="cpu"), grabcut(image, frozen_mask.copy(), device="cpu"))
    flipped_box = (80 - BOX[2], BOX[1], 80 - BOX[0], BOX[3])
    assert np.array_equal(
        grabcut(flipped, box=flipped_box, device="cpu"),
        grabcut(np.ascontiguousarray(flipped), box=flipped_box, device="cpu"),
    )
    lists = grabcut([crop, flipped, frozen], box=[BOX, flipped_box, BOX], device="cpu")
    assert np.array_equal(lists[0], ref) and np.array_equal(lists[2], ref)
    assert not [w for w in recwarn if "not writable" in str(w.message)]


def test_deterministic_and_seeded(image: np.ndarray) -> None:
    a = grabcut(image, box=BOX, device="cpu", seed=7)
    b = grabcut(image, box=BOX, device="cpu", seed=7)
    assert np.array_equal(a, b)


def test_inputs_are_not_modified(image: np.ndarray) -> None:
    img_copy = image.copy()
    mask = np.full(image.shape[:2], GC_BGD, np.uint8)
    mask[10:50, 15:60] = GC_PR_FGD
    mask_copy = mask.copy()
    grabcut(image, mask, device="cpu")
    assert np.array_equal(image, img_copy) and np.array_equal(mask, mask_copy)
    _, model = grabcut(image, mask, return_model=True, device="cpu")
    params = model.params.clone()
    grabcut(image, mask, model=model, device="cpu")
    assert torch.equal(model.params, params)


def test_mask_init_equals_box_init(image: np.ndarray) -> None:
    mask = np.full(image.shape[:2], GC_BGD, np.uint8)
    mask[10:50, 15:60] = GC_PR_FGD
    assert np.array_equal(grabcut(image, mask, device="cpu"), grabcut(image, box=BOX, device="cpu"))


def test_hard_labels_never_change(image: np.ndarray) -> None:
    rng = np.random.default_rng(4)
    mask = rng.integers(0, 4, image.shape[:2]).astype(np.uint8)
    out = grabcut(image, mask, device="cpu")
    hard = mask < 2
    assert np.array_equal(out[hard], mask[hard])
    assert set(np.unique(out[~hard])) <= {GC_PR_BGD, GC_PR_FGD}


def test_iterations_one_at_a_time_equal_all_at_once(image: np.ndarray) -> None:
    """max_iter=n equals init (0 iterations) then n single GC_EVAL steps: the early
    stop at a fixed point never changes the result."""
    full, full_model = grabcut(image, box=BOX, max_iter=5, return_model=True, device="cpu")
    mask, model = grabcut(image, box=BOX, max_iter=0, return_model=True, device="cpu")
    for _ in range(5):
        mask, model = grabcut(image, mask, model=model, max_iter=1, return_model=True, device="cpu")
    assert np.array_equal(mask, full)
    assert torch.equal(model.params, full_model.params)
    assert np.array_equal(
        grabcut(image, box=BOX, max_iter=40, device="cpu"), grabcut(image, box=BOX, max_iter=60, device="cpu")
    )


def test_freeze_model_keeps_model(image: np.ndarray) -> None:
    mask, model = grabcut(image, box=BOX, return_model=True, device="cpu")
    strokes = mask.copy()
    strokes[20:25, 30:35] = GC_BGD
    out, model2 = grabcut(image, strokes, model=model, freeze_model=True, return_model=True, device="cpu")
    assert torch.equal(model2.params, model.params)
    assert np.all(out[20:25, 30:35] == GC_BGD)


def test_model_shape_and_cv2_round_trip(image: np.ndarray) -> None:
    _, model = grabcut(image, box=BOX, return_model=True, device="cpu")
    assert isinstance(model, GrabCutModel) and model.params.shape == (10, 13) and model.components == 5
    bgd, fgd = model.to_cv2()
    assert bgd.shape == (1, 65) and fgd.shape == (1, 65) and bgd.dtype == np.float64
    back = GrabCutModel.from_cv2(bgd, fgd)
    assert torch.equal(back.params, model.params)
    assert abs(model.background[:, 0].sum().item() - 1) < 1e-12
    assert abs(model.foreground[:, 0].sum().item() - 1) < 1e-12


def test_components_and_gamma_parameters(image: np.ndarray) -> None:
    mask, model = grabcut(image, box=BOX, components=3, gamma=10.0, return_model=True, device="cpu")
    assert model.params.shape == (6, 13)
    assert mask.shape == image.shape[:2]


def test_whole_image_box_uses_border_as_background() -> None:
    rng = np.random.default_rng(5)
    img = np.full((40, 40, 3), 30, np.uint8) + rng.integers(0, 5, (40, 40, 3)).astype(np.uint8)
    img[10:30, 12:28] = (200, 40, 40)
    mask = grabcut(img, box=(0, 0, 40, 40), device="cpu")
    fg = (mask & 1).astype(bool)
    assert fg[12:28, 14:26].all() and not fg[:8].any()
    assert np.all(mask[0] == GC_BGD)


def test_fgd_label_constants_match_cv2() -> None:
    cv2 = pytest.importorskip("cv2")
    assert (GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD) == (cv2.GC_BGD, cv2.GC_FGD, cv2.GC_PR_BGD, cv2.GC_PR_FGD)
    assert (
        torchgrabcut.GC_INIT_WITH_RECT,
        torchgrabcut.GC_INIT_WITH_MASK,
        torchgrabcut.GC_EVAL,
        torchgrabcut.GC_EVAL_FREEZE_MODEL,
    ) == (cv2.GC_INIT_WITH_RECT, cv2.GC_INIT_WITH_MASK, cv2.GC_EVAL, cv2.GC_EVAL_FREEZE_MODEL)


def test_tiny_images() -> None:
    for h, w in [(1, 1), (1, 7), (7, 1), (2, 2)]:
        img = np.random.default_rng(h * 10 + w).integers(0, 255, (h, w, 3)).astype(np.uint8)
        mask = np.full((h, w), GC_PR_FGD, np.uint8)
        mask.flat[0] = GC_BGD
        if h * w == 1:
            mask[0, 0] = GC_FGD
            with pytest.raises(ValueError, match="background"):
                grabcut(img, mask, device="cpu")
            continue
        out = grabcut(img, mask, device="cpu")
        assert out.shape == (h, w) and out.flat[0] == GC_BGD


def _no_foreground_scene() -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """Noise with a red square in the box and red along the top: the background
    explains every colour in the box, so a box alone finds no foreground (in cv2 too)."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    img[22:38, 32:48] = np.clip(rng.normal((40, 40, 200), 5, (16, 16, 3)), 0, 255)
    img[0:10, :] = np.clip(rng.normal((40, 40, 200), 40, (10, 80, 3)), 0, 255)
    return img, (20, 15, 60, 45)


def test_strokes_after_an_empty_foreground_are_learnt_as_cv2_does() -> None:
    """Item 5: GC_EVAL from a model whose foreground mixture is empty learns it from the
    strokes (cv2 assigns component 0 and relearns both mixtures) instead of raising."""
    cv2 = pytest.importorskip("cv2")
    img, (x0, y0, x1, y1) = _no_foreground_scene()
    cv_mask = np.zeros(img.shape[:2], np.uint8)
    bgd, fgd = np.zeros((1, 65)), np.zeros((1, 65))
    cv2.grabCut(img, cv_mask, (x0, y0, x1 - x0, y1 - y0), bgd, fgd, 5, cv2.GC_INIT_WITH_RECT)
    ours, model = grabcut(img, box=(x0, y0, x1, y1), return_model=True, device="cpu")
    assert not (cv_mask & 1).any() and not (ours & 1).any()
    assert not fgd[0, :5].any() and not model.foreground[:, 0].any()  # no foreground component left

    for start, given in ((cv_mask, (bgd, fgd)), (ours, model.to_cv2())):
        strokes = start.copy()
        strokes[26:34, 36:44] = GC_FGD
        expected, b_cv, f_cv = strokes.copy(), given[0].copy(), given[1].copy()
        cv2.grabCut(img, expected, None, b_cv, f_cv, 3, cv2.GC_EVAL)
        assert (expected & 1).sum() == 256  # the whole red square, not just the strokes

        out, learnt = grabcut(
            img, strokes, model=GrabCutModel.from_cv2(*given), max_iter=3, return_model=True, device="cpu"
        )
        assert np.array_equal(out, expected)
        dropin, b_ours, f_ours = strokes.copy(), given[0].copy(), given[1].copy()
        torchgrabcut.grabCut(img, dropin, None, b_ours, f_ours, 3, torchgrabcut.GC_EVAL, device="cpu")
        assert np.array_equal(dropin, expected)
        # The foreground learnt from the strokes: same weights, and the same mixture where
        # weighted (cv2 leaves stale means in empty components, ours zeros).
        assert np.allclose(f_ours[0, :5], f_cv[0, :5])
        used = np.flatnonzero(f_cv[0, :5] > 0)
        got, want = GrabCutModel.from_cv2(b_ours, f_ours), GrabCutModel.from_cv2(b_cv, f_cv)
        assert np.allclose(got.foreground[used].numpy(), want.foreground[used].numpy())
        assert torch.equal(learnt.params, got.params)

        with pytest.raises(ValueError, match="with freeze_model, every class needs a component"):
            grabcut(img, strokes, model=GrabCutModel.from_cv2(*given), freeze_model=True, device="cpu")


def test_eval_with_no_pixel_of_an_empty_class_goes_on_as_cv2_does() -> None:
    """No foreground in the model and none in the mask: cv2 gives an all-background
    mask, and so does this (nothing to learn the class from, it stays empty)."""
    cv2 = pytest.importorskip("cv2")
    img, box = _no_foreground_scene()
    ours, model = grabcut(img, box=box, return_model=True, device="cpu")
    bgd, fgd = model.to_cv2()
    expected = ours.copy()
    cv2.grabCut(img, expected, None, bgd.copy(), fgd.copy(), 2, cv2.GC_EVAL)
    assert np.array_equal(grabcut(img, ours, model=model, max_iter=2, device="cpu"), expected)


# ---------------------------------------------------------------- the device (torchgrabcut.device)


def test_a_numpy_list_computes_where_a_single_numpy_image_does(
    image: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grabcut asks choose_device about the list's entries (it took the first's CPU tensor)."""
    seen: list[list[type]] = []
    real = torchgrabcut.api.choose_device

    def spy(images, device=None):  # type: ignore[no-untyped-def]
        seen.append([type(i) for i in images])
        return real(images, device)

    monkeypatch.setattr(torchgrabcut.api, "choose_device", spy)
    grabcut([image, image], box=BOX, max_iter=1)
    assert seen == [[np.ndarray, np.ndarray]]
