"""Every wrong input raises a clear exception naming the argument; nothing is modified."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchgrabcut import GC_BGD, GC_FGD, GC_PR_FGD, GrabCutModel, grabCut, grabcut

IMG = np.random.default_rng(0).integers(0, 255, (20, 30, 3)).astype(np.uint8)
BOX = (5, 5, 25, 15)


def good_mask() -> np.ndarray:
    m = np.zeros((20, 30), np.uint8)
    m[5:15, 5:25] = GC_PR_FGD
    return m


@pytest.mark.parametrize(
    ("kwargs", "exc", "pattern"),
    [
        ({"image": IMG.astype(np.float32), "box": BOX}, TypeError, "image: expected dtype uint8"),
        ({"image": IMG.astype(np.int16), "box": BOX}, TypeError, "image: expected dtype uint8"),
        ({"image": IMG[:, :, :2], "box": BOX}, ValueError, r"image: expected .*\(H, W, 3\)"),
        ({"image": IMG[:, :, 0], "box": BOX}, ValueError, r"image: expected .*\(H, W, 3\)"),
        ({"image": IMG[:0], "box": BOX}, ValueError, "image: expected a non-empty"),
        ({"image": [], "box": BOX}, ValueError, "image: expected at least one"),
        ({"image": "photo.jpg", "box": BOX}, TypeError, "image: expected a numpy array or a torch.Tensor"),
        ({"image": torch.zeros(3, 10, 10), "box": BOX}, TypeError, "image: expected dtype torch.uint8"),
        ({"image": torch.zeros(4, 10, 10, dtype=torch.uint8), "box": BOX}, ValueError, r"\(3, H, W\)"),
        ({"image": torch.zeros(2, 1, 10, 10, dtype=torch.uint8), "box": BOX}, ValueError, r"\(B, 3, H, W\)"),
        ({"image": IMG}, ValueError, "box or mask: expected one"),
        ({"image": IMG, "box": BOX, "mask": good_mask()}, ValueError, "box and mask"),
        ({"image": IMG, "box": (5, 5, 5, 15)}, ValueError, "box: .*empty"),
        ({"image": IMG, "box": (25, 5, 5, 15)}, ValueError, "box: .*inverted"),
        ({"image": IMG, "box": (5, 5, 31, 15)}, ValueError, r"box: expected 0 <= x0 < x1 <= 30"),
        ({"image": IMG, "box": (-1, 5, 20, 15)}, ValueError, "box: expected 0 <= x0"),
        ({"image": IMG, "box": (5, 5, float("nan"), 15)}, ValueError, "box: expected whole, finite"),
        ({"image": IMG, "box": (5, 5, 20.5, 15)}, ValueError, "box: expected whole, finite"),
        ({"image": IMG, "box": (5, 5, 20)}, ValueError, r"box: expected 4 numbers"),
        ({"image": IMG, "box": "5,5,20,15"}, ValueError, r"box: expected 4 numbers"),
        ({"image": IMG, "mask": np.full((20, 30), 4, np.uint8)}, ValueError, "mask: expected labels 0..3"),
        ({"image": IMG, "mask": np.full((20, 30), -1, np.int32)}, ValueError, "mask: expected labels 0..3"),
        (
            {"image": IMG, "mask": np.zeros((20, 29), np.uint8)},
            ValueError,
            r"mask: expected the image's size",
        ),
        ({"image": IMG, "mask": np.zeros((20, 30), np.float32)}, TypeError, "mask: expected an integer"),
        ({"image": IMG, "mask": np.zeros((20, 30), np.uint8)}, ValueError, "mask: no foreground pixel"),
        (
            {"image": IMG, "mask": np.full((20, 30), GC_PR_FGD, np.uint8)},
            ValueError,
            "mask: no background pixel",
        ),
        ({"image": IMG, "box": BOX, "max_iter": -1}, ValueError, "max_iter: expected 0"),
        ({"image": IMG, "box": BOX, "max_iter": 2.5}, TypeError, "max_iter: expected an int"),
        ({"image": IMG, "box": BOX, "max_iter": True}, TypeError, "max_iter: expected an int"),
        ({"image": IMG, "box": BOX, "components": 0}, ValueError, "components: expected 1..16"),
        ({"image": IMG, "box": BOX, "gamma": float("inf")}, ValueError, "gamma: expected a finite"),
        ({"image": IMG, "box": BOX, "gamma": -1.0}, ValueError, "gamma: expected 0 < gamma"),
        ({"image": IMG, "box": BOX, "gamma": np.float32(-1)}, ValueError, "gamma: expected 0 < gamma"),
        ({"image": IMG, "box": BOX, "gamma": np.float32("nan")}, ValueError, "gamma: expected a finite"),
        ({"image": IMG, "box": BOX, "gamma": np.float64("-inf")}, ValueError, "gamma: expected a finite"),
        ({"image": IMG, "box": BOX, "gamma": np.int64(0)}, ValueError, "gamma: expected 0 < gamma"),
        ({"image": IMG, "box": BOX, "gamma": np.float32(1e5)}, ValueError, "gamma: expected 0 < gamma"),
        ({"image": IMG, "box": BOX, "gamma": True}, TypeError, "gamma: expected a number, got bool"),
        ({"image": IMG, "box": BOX, "gamma": np.True_}, TypeError, "gamma: expected a number, got bool"),
        ({"image": IMG, "box": BOX, "gamma": np.complex64(50)}, TypeError, "gamma: expected a number"),
        ({"image": IMG, "box": BOX, "gamma": "50"}, TypeError, "gamma: expected a number, got str"),
        ({"image": IMG, "box": BOX, "seed": np.uint64(2**64 - 1)}, ValueError, "seed: expected -9223372036854775808"),
        ({"image": IMG, "box": BOX, "max_iter": np.float32(2)}, TypeError, "max_iter: expected an int"),
        ({"image": IMG, "box": BOX, "components": np.uint8(17)}, ValueError, "components: expected 1..16"),
        ({"image": IMG, "box": BOX, "return_model": 1}, TypeError, "return_model: expected bool, got int"),
        (
            {"image": torch.zeros(0, 3, 20, 30, dtype=torch.uint8), "box": BOX},
            ValueError,
            r"image: expected at least one image, got an empty batch of shape \(0, 3, 20, 30\)",
        ),
        ({"image": IMG, "box": BOX, "device": "tpu"}, ValueError, "device: expected"),
        ({"image": IMG, "box": BOX, "model": "x"}, TypeError, "model: expected a torchgrabcut.GrabCutModel"),
        ({"image": IMG, "box": BOX, "freeze_model": True}, ValueError, "freeze_model: needs a model"),
    ],
)
def test_bad_arguments_raise(kwargs: dict, exc: type, pattern: str) -> None:
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    image = kwargs.pop("image")
    kwargs.setdefault("device", "cpu")
    with pytest.raises(exc, match=pattern):
        grabcut(image, **kwargs)
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, kwargs.get(k, image)), k


def _mask_with(dtype: type, value: int) -> np.ndarray:
    m = good_mask().astype(dtype)
    m[0, 0] = value
    return m


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.uint16, 4),
        (np.uint16, 2**16 - 1),
        (np.uint32, 2**32 - 1),
        (np.uint64, 4),
        (np.uint64, 2**63),
        (np.uint64, 2**64 - 1),
        (np.int64, 2**63 - 1),
        (np.int64, -(2**63)),
        (np.int8, -128),
    ],
)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_masks_of_every_integer_type_give_the_labels_error(dtype: type, value: int, as_tensor: bool) -> None:
    """Wide unsigned masks (torch has no min/max for them) get the labels error naming the value."""
    mask = _mask_with(dtype, value)
    with pytest.raises(ValueError, match=rf"mask: expected labels 0..3 .*, got {value}$"):
        grabcut(IMG, torch.from_numpy(mask) if as_tensor else mask, device="cpu")


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64, np.int64, np.int8, np.bool_])
def test_masks_of_every_integer_type_are_read_as_labels(dtype: type) -> None:
    mask = good_mask()
    if dtype is np.bool_:  # False BGD, True FGD
        mask = (mask == GC_PR_FGD).astype(np.uint8)
    expected = grabcut(IMG, mask, device="cpu")
    assert np.array_equal(grabcut(IMG, mask.astype(dtype), device="cpu"), expected)
    assert np.array_equal(grabcut(IMG, torch.from_numpy(mask.astype(dtype)), device="cpu"), expected)


def test_numpy_scalars_are_numbers_like_python_ones() -> None:
    expected, model = grabcut(IMG, box=BOX, gamma=50.0, max_iter=2, seed=3, return_model=True, device="cpu")
    for gamma in (np.float32(50), np.float16(50), np.int64(50), np.uint8(50), np.float64(50)):
        out, out_model = grabcut(
            IMG,
            box=np.array(BOX, np.uint64),
            gamma=gamma,
            max_iter=np.int8(2),
            seed=np.uint64(3),
            components=np.int32(5),
            return_model=np.True_,
            freeze_model=np.False_,
            device="cpu",
        )
        assert np.array_equal(out, expected) and torch.equal(out_model.params, model.params)


def test_bad_models_raise() -> None:
    _, model = grabcut(IMG, box=BOX, return_model=True, device="cpu")
    bad = model.params.clone()
    bad[0, 5] = float("nan")
    with pytest.raises(ValueError, match="model: expected finite"):
        grabcut(IMG, good_mask(), model=GrabCutModel(bad), device="cpu")
    dead = model.params.clone()
    dead[5:, 0] = 0.0  # no foreground component has weight
    with pytest.raises(ValueError, match="model: with freeze_model, every class needs a component"):
        grabcut(IMG, good_mask(), model=GrabCutModel(dead), freeze_model=True, device="cpu")
    # Not frozen, the empty class is learnt from the mask (test_api: as cv2 does).
    assert grabcut(IMG, good_mask(), model=GrabCutModel(dead), device="cpu").shape == IMG.shape[:2]
    with pytest.raises(ValueError, match="model: expected 3 components"):
        grabcut(IMG, good_mask(), model=model, components=3, device="cpu")
    with pytest.raises(ValueError, match=r"GrabCutModel.params: expected shape"):
        GrabCutModel(torch.zeros(10, 12, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"GrabCutModel.params: expected dtype float64"):
        GrabCutModel(torch.zeros(10, 13))
    with pytest.raises(ValueError, match="bgdModel: expected 13 \\* K values"):
        GrabCutModel.from_cv2(np.zeros((1, 64)), np.zeros((1, 65)))
    with pytest.raises(ValueError, match="fgdModel: expected finite"):
        GrabCutModel.from_cv2(np.zeros((1, 65)), np.full((1, 65), np.inf))


def test_bad_cv2_dropin_arguments() -> None:
    mask = np.zeros((20, 30), np.uint8)
    with pytest.raises(ValueError, match="rect: expected a non-empty"):
        grabCut(IMG, mask, (40, 40, 5, 5), np.zeros((1, 65)), np.zeros((1, 65)), 1, 0, device="cpu")
    with pytest.raises(TypeError, match="img: expected an 8-bit 3-channel"):
        grabCut(IMG[:, :, 0], mask, (1, 1, 5, 5), np.zeros((1, 65)), np.zeros((1, 65)), 1, 0, device="cpu")
    with pytest.raises(ValueError, match="mode: expected"):
        grabCut(IMG, mask, (1, 1, 5, 5), np.zeros((1, 65)), np.zeros((1, 65)), 1, 7, device="cpu")
    assert np.all(mask == 0)


def test_direct_op_calls_are_checked() -> None:
    op = torch.ops.torchgrabcut.grabcut
    img = torch.zeros(3, 4, 4, dtype=torch.uint8)
    mask = torch.zeros(4, 4, dtype=torch.uint8)
    model = torch.zeros(1, 10, 13, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"masks\[0\]: expected its image's shape \(4, 4\), got \[3, 4\]"):
        op([img], [mask[:3]], model, 1, 5, 50.0, 0, True, False)
    with pytest.raises(ValueError, match=r"masks: expected one mask per image \(1\), got 2"):
        op([img], [mask, mask], model, 1, 5, 50.0, 0, True, False)
    with pytest.raises(ValueError, match=r"images\[0\]: expected shape \(3, H, W\)"):
        op([img[None]], [mask], model, 1, 5, 50.0, 0, True, False)
    with pytest.raises(ValueError, match="no foreground pixel"):
        op([img], [mask], model, 1, 5, 50.0, 0, True, False)
    bad = mask.clone()
    bad[0, 0] = 9
    with pytest.raises(ValueError, match=r"mask: expected labels 0..3"):
        op([img], [bad], model, 1, 5, 50.0, 0, True, False)
    m = mask.clone()
    m[1:3, 1:3] = GC_FGD
    with pytest.raises(ValueError, match="model: the background mixture has no usable component"):
        op([img], [m], model, 1, 5, 50.0, 0, False, True)  # frozen: used as it is
    (out,), learnt = op([img], [m], model, 1, 5, 50.0, 0, False, False)  # not frozen: learnt from the mask
    assert torch.equal(out, m) and learnt[0, 0, 0] == 1.0 and learnt[0, 5, 0] == 1.0
    assert torch.all(mask == GC_BGD)
    with pytest.raises(ValueError, match=r"image 1 of the batch: mask: expected labels 0..3"):
        op([img, img], [m, bad], torch.zeros(2, 10, 13, dtype=torch.float64), 1, 5, 50.0, 0, True, False)


HWC = torch.from_numpy(IMG)
HINTS = [
    (HWC, r"got \(20, 30, 3\) \(channels last\? pass image\.permute\(2, 0, 1\)\)"),
    (HWC[None].expand(2, -1, -1, -1), r"got \(2, 20, 30, 3\) \(channels last\? pass image\.permute\(0, 3, 1, 2\)\)"),
    (np.ascontiguousarray(IMG.transpose(2, 0, 1)), r"\(channels first\? pass image\.transpose\(1, 2, 0\)\)"),
    (IMG[:, :, 0], r"\(a grey image: repeat it into 3 channels\)"),
    (HWC[:, :, 0], r"\(a grey image: repeat it into 3 channels\)"),
    (HWC.permute(2, 0, 1)[:1], r"\(a grey image: repeat it into 3 channels\)"),
    (np.zeros((20, 30, 4), np.uint8), r"\(drop the alpha channel\)"),
    (torch.zeros(4, 20, 30, dtype=torch.uint8), r"\(drop the alpha channel\)"),
    (np.zeros((20, 30, 2), np.uint8), r"got \(20, 30, 2\)$"),
]


@pytest.mark.parametrize(("image", "pattern"), HINTS)
def test_wrong_image_shapes_say_how_to_fix_the_usual_ones(image: np.ndarray | torch.Tensor, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        grabcut(image, box=BOX)
