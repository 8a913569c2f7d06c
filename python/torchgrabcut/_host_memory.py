"""Out of host memory on a call's way in or out: every host allocation of a call (numpy
and torch conversions, the masks of boxes, the operator's copies of its inputs) fails
as the core's own scratch does, with torch.OutOfMemoryError naming the image, not with
numpy's MemoryError or the allocator's "[enforce fail at alloc_cpu.cpp]" RuntimeError.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence

import torch

# What torch's CPU allocator raises (as a plain RuntimeError) when malloc fails.
_ALLOC_FAILURE = re.compile(r"DefaultCPUAllocator: can't allocate memory|enforce fail at alloc_cpu")
_REQUESTED = re.compile(r"allocate (\d+) bytes|Unable to allocate ([\d.]+ [KMGTP]?i?B)")


@contextlib.contextmanager
def host_memory(what: str) -> Iterator[None]:
    """Allocation failures inside as torch.OutOfMemoryError naming ``what`` (an image, a batch)."""
    try:
        yield
    except torch.OutOfMemoryError:  # the core's and CUDA's, which already say what and how much
        raise
    except MemoryError as err:
        raise out_of_memory(what, err) from err
    except RuntimeError as err:
        if _ALLOC_FAILURE.search(str(err)) is None:
            raise
        raise out_of_memory(what, err) from err


def out_of_memory(what: str, err: BaseException) -> torch.OutOfMemoryError:
    found = _REQUESTED.search(str(err))
    if found is None:
        size = ""
    elif found.group(1) is not None:
        size = f" ({int(found.group(1)) / 2**30:.2f} GiB more was asked for)"
    else:
        size = f" ({found.group(2)} more was asked for)"
    return torch.OutOfMemoryError(
        f"torchgrabcut.grabcut: out of host memory for {what}{size}; use smaller images or fewer at once"
    )


def image_name(name: str, shape: Sequence[int]) -> str:
    """``image[2] (480x640, 307200 pixels)`` of a name and an (H, W, ...) shape."""
    h, w = int(shape[0]), int(shape[1])
    return f"{name} ({h}x{w}, {h * w} pixels)"
