"""Out of host memory anywhere on a call's way in or out: torch.OutOfMemoryError naming the image.

The core's own scratch already failed so; the conversions before it (numpy copies, the
model's parameters, the masks of the boxes, the operator's copies of its inputs) gave numpy's
MemoryError or the allocator's raw ``[enforce fail at alloc_cpu.cpp]`` RuntimeError.
Allocations are made to fail by patching them, and once for real under an address-space
limit in a child process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchgrabcut
from torchgrabcut import _arguments, _ops

ALLOC_FAILURE = (
    "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
    "you tried to allocate 3221225472 bytes. Error code 12 (Cannot allocate memory)"
)
NUMPY_FAILURE = "Unable to allocate 2.68 GiB for an array with shape (30000, 30000, 3) and data type uint8"


def _image(h: int = 40, w: int = 50) -> np.ndarray:
    rng = np.random.default_rng(0)
    img = rng.integers(20, 60, (h, w, 3)).astype(np.uint8)
    img[10:30, 15:35] = (40, 200, 220)
    return img


def _failing(error: BaseException) -> Callable[..., Any]:
    def fail(*args: object, **kwargs: object) -> Any:
        raise error

    return fail


# Each allocation of a call, made to fail as it fails for real: (what to patch, its error).
ALLOCATIONS: dict[str, tuple[Any, str, BaseException]] = {
    "numpy copy of a read-only image": (_arguments, "_from_numpy", MemoryError(NUMPY_FAILURE)),
    "model parameters": (torch, "zeros", RuntimeError(ALLOC_FAILURE)),
    "masks of the boxes": (np, "zeros", MemoryError(NUMPY_FAILURE)),  # made in numpy on the CPU
    "operator's copies of its inputs": (_ops, "grabcut_op", RuntimeError(ALLOC_FAILURE)),
}


@pytest.mark.parametrize("where", sorted(ALLOCATIONS))
def test_every_allocation_of_a_call_fails_as_out_of_memory_naming_the_image(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    owner, name, error = ALLOCATIONS[where]
    img = _image()
    img.flags.writeable = False  # a read-only array is copied on the way in
    monkeypatch.setattr(owner, name, _failing(error))
    with pytest.raises(torch.OutOfMemoryError) as caught:
        torchgrabcut.grabcut([img], box=(10, 5, 40, 35), device="cpu")
    message = str(caught.value)
    assert message.startswith("torchgrabcut.grabcut: out of host memory for image"), message
    assert "(40x50, 2000 pixels)" in message and "use smaller images" in message, message
    assert ("3.00 GiB" if isinstance(error, RuntimeError) else "2.68 GiB") in message, message


def test_a_batch_is_named_with_its_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "zeros", _failing(RuntimeError(ALLOC_FAILURE)))
    with pytest.raises(torch.OutOfMemoryError, match=r"a batch of 2 images \(3800 pixels\)"):
        torchgrabcut.grabcut([_image(), _image(30, 60)], box=(10, 5, 20, 25), device="cpu")


def test_a_mask_copy_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    mask = np.zeros((40, 50), np.uint8)
    mask[5:35, 10:40] = 3
    mask = mask[::-1]  # a negative stride: copied on the way in
    from_numpy = _arguments._from_numpy

    def fail_for_masks(array: np.ndarray) -> torch.Tensor:
        if array.ndim == 2:
            raise MemoryError(NUMPY_FAILURE)
        return from_numpy(array)

    monkeypatch.setattr(_arguments, "_from_numpy", fail_for_masks)
    with pytest.raises(torch.OutOfMemoryError, match=r"out of host memory for mask \(40x50, 2000 pixels\)"):
        torchgrabcut.grabcut(_image(), mask, device="cpu")


def test_other_runtime_errors_pass_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ops, "grabcut_op", _failing(RuntimeError("something else")))
    with pytest.raises(RuntimeError, match=r"^something else$") as caught:
        torchgrabcut.grabcut(_image(), box=(10, 5, 40, 35), device="cpu")
    assert not isinstance(caught.value, torch.OutOfMemoryError)


# A real failure: the child limits its address space to what it has mapped plus a little,
# then asks for an image that needs more (a broadcast view, copied on the way in; a
# writeable one, whose planar copy and masks are allocated).
_CHILD = textwrap.dedent(
    """
    import resource, sys
    import numpy as np, torch, torchgrabcut
    kind = sys.argv[1]
    image = (np.broadcast_to(np.uint8(9), (12000, 12000, 3)) if kind == "view"
             else np.full((6000, 6000, 3), 9, np.uint8))
    torchgrabcut.grabcut(np.zeros((8, 8, 3), np.uint8), box=(2, 2, 6, 6), device="cpu")  # warm up
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))
    try:
        torchgrabcut.grabcut(image, box=(10, 10, 5000, 5000), device="cpu", max_iter=0)
    except torch.OutOfMemoryError as err:
        print("OOM:", err)
    except BaseException as err:
        print("OTHER:", type(err).__name__, err)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
@pytest.mark.parametrize(("kind", "size"), [("view", "12000x12000"), ("writeable", "6000x6000")])
def test_a_real_allocation_failure_names_the_image(kind: str, size: str) -> None:
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, kind], capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1"}
    )
    out = res.stdout.strip()
    assert out.startswith("OOM: torchgrabcut.grabcut: out of host memory for image"), (out, res.stderr[-2000:])
    assert f"({size}, " in out, out
