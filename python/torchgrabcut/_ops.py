"""Loads the compiled operators and registers their fake (meta) kernels.

The fake kernels give the output shapes without computing anything, so that
``torch.compile(fullgraph=True)`` can trace calls to the operators.
"""

from __future__ import annotations

import importlib

import torch


def _torch_release(version: str) -> str:
    """'2.11' of '2.11.0+cu130'."""
    return ".".join(version.split("+")[0].split(".")[:2])


def _load_extension() -> None:
    """Loads _C (registering torch.ops.torchgrabcut), or says which torch it was built for.

    An extension compiled against one torch release does not load into another (or
    worse, loads and crashes later): the release recorded at build time is checked
    first, so the error names both and gives the command that rebuilds it.
    """
    try:
        info = importlib.import_module("torchgrabcut._build_info")
    except ImportError:
        info = None
    built_for = getattr(info, "TORCH_VERSION", None)
    rebuild = getattr(info, "REBUILD", "pip install --no-build-isolation --force-reinstall --no-deps .")
    if built_for is not None and _torch_release(built_for) != _torch_release(torch.__version__):
        raise ImportError(
            f"torchgrabcut was built for torch {built_for}, but this is torch {torch.__version__}: "
            f"rebuild it against this torch (in the torchgrabcut source folder: {rebuild}), "
            f"or install torch=={_torch_release(built_for)}.*"
        )
    try:
        importlib.import_module("torchgrabcut._C")
    except (ImportError, OSError) as err:
        where = f"built for torch {built_for}" if built_for else "its build"
        raise ImportError(
            f"torchgrabcut's compiled extension (_C) could not be loaded ({where}; this is torch "
            f"{torch.__version__}): {err}. Rebuild it in the torchgrabcut source folder: {rebuild}"
        ) from err


_load_extension()

__all__ = [
    "MAX_COMPONENTS",
    "MAX_GAMMA",
    "MAX_ITER_LIMIT",
    "cuda_kernels_built",
    "grabcut_op",
    "maxflow_grid_op",
]

grabcut_op = torch.ops.torchgrabcut.grabcut.default
maxflow_grid_op = torch.ops.torchgrabcut.maxflow_grid.default

# grabcut's argument limits, as the core enforces them (csrc/core/limits.h).
_limits: tuple[int, int, float] = torch.ops.torchgrabcut.limits()
MAX_ITER_LIMIT: int = int(_limits[0])
MAX_COMPONENTS: int = int(_limits[1])
MAX_GAMMA: float = float(_limits[2])


@torch.library.register_fake("torchgrabcut::grabcut")
def _grabcut_fake(
    images: list[torch.Tensor],
    masks: list[torch.Tensor],
    model: torch.Tensor,
    max_iter: int,
    components: int,
    gamma: float,
    seed: int,
    init_model: bool,
    freeze_model: bool,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Mask b: (H_b, W_b) uint8, contiguous, on images[b]'s device; the model as it came, contiguous."""
    torch._check(len(masks) == len(images))
    torch._check(model.dim() == 3 and model.shape[0] == len(images) and model.shape[1] == 2 * components)
    out = []
    for image, mask in zip(images, masks):
        torch._check(image.dim() == 3 and image.shape[0] == 3)
        torch._check(mask.dim() == 2 and mask.shape[0] == image.shape[1] and mask.shape[1] == image.shape[2])
        out.append(mask.new_empty((image.shape[1], image.shape[2]), device=image.device))
    return out, torch.empty_like(model, memory_format=torch.contiguous_format)


@torch.library.register_fake("torchgrabcut::maxflow_grid")
def _maxflow_grid_fake(terminal: torch.Tensor, nlinks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    torch._check(terminal.dim() == 3)
    cut = terminal.new_empty(terminal.shape, dtype=torch.uint8)
    flows = terminal.new_empty((terminal.shape[0],), dtype=torch.int64)
    return cut, flows


def cuda_kernels_built() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key("torchgrabcut::grabcut", "CUDA"))
