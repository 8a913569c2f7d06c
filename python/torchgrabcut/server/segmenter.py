"""GrabCut as the server calls it: on one device, timed with the GPU work finished."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from torchgrabcut.api import grabcut
from torchgrabcut.device import resolve_device
from torchgrabcut.model import GrabCutModel

__all__ = ["Segmenter"]


class Segmenter:
    """Runs GrabCut on ``device`` (None: the GPU when usable, else the CPU) and times each call."""

    def __init__(self, device: str | None) -> None:
        self.device = resolve_device(device)

    def run(
        self, image: np.ndarray, mask: np.ndarray | None = None, **kwargs: Any
    ) -> tuple[np.ndarray, GrabCutModel, float]:
        """(mask, model, milliseconds): ``grabcut(image, mask, **kwargs)`` and its time.

        The GPU is synchronised before and after, so that the time is this call's work alone.
        """
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        t = time.perf_counter()
        mask, model = grabcut(image, mask, device=self.device, return_model=True, **kwargs)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return mask, model, (time.perf_counter() - t) * 1e3
