"""grabcut's messages for arguments of the wrong kind: nested Python lists, sparse and nested tensors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import torchgrabcut

# torch warns that its sparse CSR/CSC and nested tensors are beta or prototype.
pytestmark = pytest.mark.filterwarnings("ignore:.*(beta state|prototype stage):UserWarning")


def _image() -> np.ndarray:
    img = np.full((40, 50, 3), 30, np.uint8)
    img[10:30, 15:35] = (40, 200, 220)
    return img


def _trimap() -> np.ndarray:
    mask = np.zeros((40, 50), np.uint8)
    mask[5:35, 10:40] = 3
    return mask


@pytest.mark.parametrize(
    ("images", "mask"),
    [
        (_image(), _trimap().tolist()),
        (_image(), tuple(map(tuple, _trimap()))),
        ([_image(), _image()], [_trimap().tolist(), _trimap().tolist()]),
        (_image(), [3, 3, 0]),
    ],
    ids=["mask.tolist()", "tuple of tuples", "a list of mask.tolist()", "a row of numbers"],
)
def test_nested_python_lists_as_a_mask_say_to_convert_them(images: object, mask: object) -> None:
    with pytest.raises(TypeError, match=r"^mask: expected a numpy array or a torch.Tensor") as caught:
        torchgrabcut.grabcut(images, mask, device="cpu")
    assert "np.asarray(mask, dtype=np.uint8)" in str(caught.value)
    assert "one mask per image" not in str(caught.value)


def test_a_list_of_masks_still_works() -> None:
    masks = torchgrabcut.grabcut([_image(), _image()], [_trimap(), _trimap()], device="cpu", max_iter=1)
    assert len(masks) == 2


_CHW = torch.from_numpy(_image()).permute(2, 0, 1).contiguous()

# Every non-strided layout torch has for these shapes, and nested tensors.
SPARSE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sparse_coo": lambda t: t.to_sparse(),
    "sparse_csr": lambda t: t.to_sparse_csr(dense_dim=t.dim() - 2),
    "sparse_csc": lambda t: t.to_sparse_csc(dense_dim=t.dim() - 2),
    "sparse_bsr": lambda t: t.to_sparse_bsr((1, 1), dense_dim=t.dim() - 2),
    "sparse_bsc": lambda t: t.to_sparse_bsc((1, 1), dense_dim=t.dim() - 2),
}


def _layout_or_skip(kind: str, t: torch.Tensor) -> torch.Tensor:
    try:
        return SPARSE[kind](t)
    except (RuntimeError, NotImplementedError, TypeError) as err:
        pytest.skip(f"torch cannot make a {kind} uint8 tensor of shape {tuple(t.shape)}: {err}")


@pytest.mark.parametrize("kind", sorted(SPARSE))
@pytest.mark.parametrize("batched", [False, True])
def test_a_sparse_image_is_a_type_error_saying_to_densify(kind: str, batched: bool) -> None:
    image = _layout_or_skip(kind, _CHW[None] if batched else _CHW)
    with pytest.raises(TypeError, match=r"^image: expected a dense tensor, got layout torch\.sparse_\w+; .*to_dense"):
        torchgrabcut.grabcut(image, box=(10, 5, 40, 35), device="cpu")
    with pytest.raises(TypeError, match=r"^image\[1\]: expected a dense tensor"):
        torchgrabcut.grabcut([_CHW, _layout_or_skip(kind, _CHW)], box=(10, 5, 40, 35), device="cpu")


@pytest.mark.parametrize("kind", sorted(SPARSE))
def test_a_sparse_mask_or_box_is_a_type_error_saying_to_densify(kind: str) -> None:
    mask = _layout_or_skip(kind, torch.from_numpy(_trimap()))
    with pytest.raises(TypeError, match=r"^mask: expected a dense tensor"):
        torchgrabcut.grabcut(_CHW, mask, device="cpu")
    with pytest.raises(TypeError, match=r"^box: expected a dense tensor"):
        torchgrabcut.grabcut(_CHW, box=torch.tensor([[10, 5, 40, 35]]).to_sparse(), device="cpu")


def test_a_nested_tensor_image_says_to_pass_a_list() -> None:
    nested = torch.nested.nested_tensor([_CHW, _CHW[:, :30]])
    with pytest.raises(TypeError, match=r"^image: expected a dense tensor, got a nested tensor; pass a list"):
        torchgrabcut.grabcut(nested, box=(10, 5, 20, 25), device="cpu")


def test_grabcut_names_the_image_of_a_batch_whose_box_covers_it() -> None:
    images = [np.zeros((30, 30, 3), np.uint8), np.zeros((2, 2, 3), np.uint8)]
    with pytest.raises(ValueError, match=r"^box\[1\]: covers the whole 2x2 image"):
        torchgrabcut.grabcut(images, box=[(5, 5, 20, 20), (0, 0, 2, 2)], device="cpu")
