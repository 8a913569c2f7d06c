"""The device policy (torchgrabcut.device): where a call on these images computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut
from torchgrabcut.device import choose_device, resolve_device


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Makes "a GPU is usable" say what the test sets (gpu(True) / gpu(False))."""

    def set_usable(usable: bool) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: usable)
        monkeypatch.setattr(torchgrabcut._ops, "cuda_kernels_built", lambda: usable)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)

    return set_usable


def test_numpy_images_default_to_the_gpu_when_one_is_usable(gpu) -> None:  # type: ignore[no-untyped-def]
    img = np.zeros((4, 5, 3), np.uint8)
    gpu(True)
    assert choose_device([img]) == torch.device("cuda", 0)
    assert choose_device([img, img.copy()]) == torch.device("cuda", 0)  # a list as one image
    assert choose_device([img], "cpu") == torch.device("cpu")
    gpu(False)
    assert choose_device([img, img]) == torch.device("cpu")


def test_tensors_compute_where_they_are_and_numpy_follows_them(gpu) -> None:  # type: ignore[no-untyped-def]
    gpu(True)
    img = np.zeros((4, 5, 3), np.uint8)
    on_cpu = torch.zeros(3, 4, 5, dtype=torch.uint8)
    elsewhere = torch.zeros(3, 4, 5, dtype=torch.uint8, device="meta")  # stands for a GPU tensor
    assert choose_device([torch.zeros(2, 3, 4, 5, dtype=torch.uint8)]) == torch.device("cpu")  # a batch
    assert choose_device([on_cpu]) == torch.device("cpu")
    assert choose_device([img, on_cpu, img]) == torch.device("cpu")
    assert choose_device([img, elsewhere]) == elsewhere.device
    with pytest.raises(ValueError, match=r"one device, got cpu \(image\[1\]\) and meta \(image\[2\]\)"):
        choose_device([img, on_cpu, elsewhere])
    assert choose_device([on_cpu, elsewhere], "cpu") == torch.device("cpu")  # device= decides


def test_resolve_device_names_what_cannot_be_used(gpu) -> None:  # type: ignore[no-untyped-def]
    gpu(False)
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device(None, torch.device("cuda", 1)) == torch.device("cuda", 1)
    with pytest.raises(ValueError, match="device: 'cuda' was asked for, but no CUDA GPU is available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match=r"device: expected 'cpu', 'cuda' or a torch.device, got 'gpu'"):
        resolve_device("gpu")
    with pytest.raises(ValueError, match=r"device: expected 'cpu' or 'cuda', got 'meta'"):
        resolve_device("meta")
