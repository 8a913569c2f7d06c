"""Where a call computes: the device policy of ``torchgrabcut.grabcut``, shared with the
command line, the server and the dataset job so that all of them decide alike.

``device=`` decides when given; otherwise tensors compute where they are, numpy
arrays beside them follow them, and numpy arrays alone go to the GPU when one is
usable (a CUDA GPU and the extension's CUDA kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchgrabcut import _ops

__all__ = ["choose_device", "gpu_usable", "resolve_device"]


def gpu_usable() -> bool:
    """True when a CUDA GPU is present and the extension was built with its CUDA kernels."""
    return bool(torch.cuda.is_available() and _ops.cuda_kernels_built())


def resolve_device(device: str | torch.device | None, default: torch.device | None = None) -> torch.device:
    """The device to compute on: ``device`` if given, else ``default``, else CUDA when usable."""
    if device is not None:
        return _checked_device(device)
    if default is not None:
        return default
    if gpu_usable():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _checked_device(device: str | torch.device) -> torch.device:
    """``device`` as a torch.device that this build can compute on, else ValueError saying why not."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device: expected 'cpu', 'cuda' or a torch.device, got {device!r}") from err
    if dev.type == "cuda" and not gpu_usable():
        why = "no CUDA GPU is available" if not torch.cuda.is_available() else "the extension was built without CUDA"
        raise ValueError(f"device: 'cuda' was asked for, but {why}")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device: expected 'cpu' or 'cuda', got {dev.type!r}")
    return dev


def choose_device(images: Sequence[object], device: str | torch.device | None = None) -> torch.device:
    """The device a call on these images (a call's image, or the entries of its list) computes on.

    ``device``, when given, decides. Otherwise tensors compute where they are: every
    tensor among the images must be on one device (a ValueError names two that
    differ), and numpy arrays beside them follow them there. Numpy arrays alone
    compute on the GPU when one is usable (``gpu_usable``: a CUDA GPU and the
    extension's CUDA kernels), else on the CPU.
    """
    if device is not None:
        return resolve_device(device)
    first: tuple[int, torch.device] | None = None
    for i, im in enumerate(images):
        if not isinstance(im, torch.Tensor):
            continue
        if first is None:
            first = (i, im.device)
        elif im.device != first[1]:
            where = (lambda j: f"image[{j}]") if len(images) > 1 else (lambda j: "image")
            raise ValueError(
                f"image: expected every tensor on one device, got {first[1]} ({where(first[0])}) and "
                f"{im.device} ({where(i)}); move them to one, or pass device= to choose"
            )
    return resolve_device(None, first[1] if first is not None else None)
