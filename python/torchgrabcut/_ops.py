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
    "download_masks_op",
    "grabcut_op",
    "maxflow_grid_op",
    "upload_images_op",
]

grabcut_op = torch.ops.torchgrabcut.grabcut.default
maxflow_grid_op = torch.ops.torchgrabcut.maxflow_grid.default
# CUDA only: host images into a padded GPU batch, masks back; one transfer each.
upload_images_op = torch.ops.torchgrabcut.upload_images_.default
download_masks_op = torch.ops.torchgrabcut.download_masks.default

# grabcut's argument limits, as the core enforces them (csrc/core/limits.h).
_limits: tuple[int, int, float] = torch.ops.torchgrabcut.limits()
MAX_ITER_LIMIT: int = int(_limits[0])
MAX_COMPONENTS: int = int(_limits[1])
MAX_GAMMA: float = float(_limits[2])


@torch.library.register_fake("torchgrabcut::grabcut")
def _grabcut_fake(
    image: torch.Tensor,
    mask: torch.Tensor,
    model: torch.Tensor,
    sizes: list[int],
    max_iter: int,
    components: int,
    gamma: float,
    seed: int,
    init_model: bool,
    freeze_model: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    torch._check(image.dim() == 4 and image.shape[1] == 3)
    torch._check(mask.dim() == 3)
    torch._check(model.dim() == 3 and model.shape[1] == 2 * components)
    return torch.empty_like(mask, memory_format=torch.contiguous_format), torch.empty_like(
        model, memory_format=torch.contiguous_format
    )


@torch.library.register_fake("torchgrabcut::maxflow_grid")
def _maxflow_grid_fake(terminal: torch.Tensor, nlinks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    torch._check(terminal.dim() == 3)
    cut = terminal.new_empty(terminal.shape, dtype=torch.uint8)
    flows = terminal.new_empty((terminal.shape[0],), dtype=torch.int64)
    return cut, flows


@torch.library.register_fake("torchgrabcut::upload_images_")
def _upload_images_fake(batch: torch.Tensor, images: list[torch.Tensor]) -> None:
    """Writes batch in place: nothing to allocate, only the shapes to check."""
    torch._check(batch.dim() == 4 and batch.shape[1] == 3)
    torch._check(len(images) == batch.shape[0])
    for image in images:
        torch._check(image.dim() == 3 and image.shape[0] == 3)
        torch._check(image.shape[1] <= batch.shape[2] and image.shape[2] <= batch.shape[3])


@torch.library.register_fake("torchgrabcut::download_masks")
def _download_masks_fake(masks: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """The masks cut to their sizes, end to end: one uint8 CPU tensor of sum(h * w) values."""
    torch._check(masks.dim() == 3)
    torch._check(len(sizes) == 2 * masks.shape[0])
    total = sum(h * w for h, w in zip(sizes[0::2], sizes[1::2], strict=True))
    return torch.empty((total,), dtype=torch.uint8, device="cpu")


def cuda_kernels_built() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key("torchgrabcut::grabcut", "CUDA"))
