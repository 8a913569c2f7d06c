"""Loads the compiled operators and registers their fake (meta) kernels.

The fake kernels give the output shapes without computing anything, so that
``torch.compile(fullgraph=True)`` can trace calls to the operators.
"""

from __future__ import annotations

import torch

from torchgrabcut import _C  # noqa: F401  (loading the library registers torch.ops.torchgrabcut)

__all__ = ["cuda_kernels_built", "download_masks_op", "grabcut_op", "maxflow_grid_op", "upload_images_op"]

grabcut_op = torch.ops.torchgrabcut.grabcut.default
maxflow_grid_op = torch.ops.torchgrabcut.maxflow_grid.default
# CUDA only: host images into a padded GPU batch, masks back; one transfer each.
upload_images_op = torch.ops.torchgrabcut.upload_images_.default
download_masks_op = torch.ops.torchgrabcut.download_masks.default


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


def cuda_kernels_built() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key("torchgrabcut::grabcut", "CUDA"))
