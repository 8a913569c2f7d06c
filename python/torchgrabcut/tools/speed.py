"""Speed of torchgrabcut (CPU and GPU) against cv2.grabCut, side by side in one run.

Times are medians over repeats after a warm-up; GPU times use CUDA events
around the whole call (upload, all iterations, download of the mask).
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from torchgrabcut.api import grabcut
from torchgrabcut.data import BUNDLED_BOX_FRACTION, BUNDLED_IMAGE
from torchgrabcut.imageio import MAX_IMAGE_PIXELS, read_image
from torchgrabcut.tools.evaluate import foreground_iou
from torchgrabcut.tools.opencv_reference import cv2_grabcut_box

__all__ = ["MIN_BENCH_MEGAPIXELS", "BenchRow", "bench_sizes", "format_bench", "gpu_median_ms", "scaled_image"]

MIN_BENCH_MEGAPIXELS = 0.001  # the bundled image at 32x32: the smallest size with a box that leaves background


@dataclass
class BenchRow:
    height: int
    width: int
    batch: int
    cv2_ms: float | None
    cpu_ms: float | None
    gpu_ms: float | None
    agree_cpu_cv2: float | None  # IoU of the two foregrounds

    @property
    def megapixels(self) -> float:
        return self.height * self.width / 1e6


def scaled_image(image: np.ndarray, megapixels: float) -> np.ndarray:
    """The image resized (bicubic, Pillow) to about ``megapixels``."""
    h, w = image.shape[:2]
    s = (megapixels * 1e6 / (h * w)) ** 0.5
    size = (max(1, round(w * s)), max(1, round(h * s)))
    return np.asarray(Image.fromarray(image[:, :, ::-1]).resize(size, Image.BICUBIC))[:, :, ::-1].copy()


def _median_ms(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def gpu_median_ms(fn: Callable[[], object], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _cv2_module() -> Any:
    try:
        import cv2  # optional: the comparison is left out without it
    except ImportError:
        return None
    return cv2


def _run_cv2(img: np.ndarray, box: tuple[int, int, int, int], max_iter: int) -> np.ndarray:
    # Reseeded on every call, so that the IoU column does not depend on the repeats before it.
    return cv2_grabcut_box(_cv2_module(), img, box, max_iter, seed=0)


def bench_sizes(
    image_path: str | Path = BUNDLED_IMAGE,
    megapixels: tuple[float, ...] = (0.3, 1.0, 4.0),
    max_iter: int = 5,
    repeats: int = 3,
    with_cv2: bool = True,
    with_cpu: bool = True,
    with_gpu: bool = True,
) -> list[BenchRow]:
    for mp in megapixels:
        if isinstance(mp, bool) or not isinstance(mp, (int, float)) or not math.isfinite(mp):
            raise ValueError(f"megapixels: expected finite numbers, got {mp!r}")
        if not MIN_BENCH_MEGAPIXELS <= mp <= MAX_IMAGE_PIXELS / 1e6:
            raise ValueError(
                f"megapixels: expected {MIN_BENCH_MEGAPIXELS:g}..{MAX_IMAGE_PIXELS / 1e6:.1f} "
                f"(torchgrabcut.imageio.MAX_IMAGE_PIXELS), got {mp}"
            )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: expected a whole number >= 1, got {repeats!r}")
    base = read_image(image_path)
    rows = []
    for mp in megapixels:
        img = scaled_image(base, mp)
        h, w = img.shape[:2]
        fx0, fy0, fx1, fy1 = BUNDLED_BOX_FRACTION
        box = (int(fx0 * w), int(fy0 * h), int(fx1 * w), int(fy1 * h))
        cv2_ms = cpu_ms = gpu_ms = agree = None
        cv2_mask = cpu_mask = None
        if with_cv2 and _cv2_module() is not None:
            cv2_mask = _run_cv2(img, box, max_iter)
            cv2_ms = _median_ms(functools.partial(_run_cv2, img, box, max_iter), repeats, warmup=0)
        if with_cpu:
            run_cpu = functools.partial(grabcut, img, box=box, max_iter=max_iter, device="cpu")
            cpu_mask = run_cpu()
            cpu_ms = _median_ms(run_cpu, repeats, warmup=0)
        if with_gpu and torch.cuda.is_available():
            run_gpu = functools.partial(grabcut, img, box=box, max_iter=max_iter, device="cuda")
            gpu_ms = gpu_median_ms(run_gpu, max(repeats, 10))
        if cv2_mask is not None and cpu_mask is not None:
            agree = foreground_iou(cv2_mask, cpu_mask)
        rows.append(BenchRow(h, w, 1, cv2_ms, cpu_ms, gpu_ms, agree))
    return rows


def format_bench(rows: list[BenchRow]) -> str:
    def ms(v: float | None) -> str:
        return f"{v:10.1f}" if v is not None else f"{'-':>10}"

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:9.1f}x" if a is not None and b is not None else f"{'-':>10}"

    head = (
        f"{'size':>11} {'MP':>5} {'batch':>5} {'cv2 ms':>10} {'CPU ms':>10} {'GPU ms':>10}"
        f" {'cv2/CPU':>10} {'cv2/GPU':>10} {'IoU(cv2,CPU)':>13}"
    )
    lines = [head]
    for r in rows:
        agree = f"{r.agree_cpu_cv2:13.3f}" if r.agree_cpu_cv2 is not None else f"{'-':>13}"
        lines.append(
            f"{r.height:>5}x{r.width:<5} {r.megapixels:5.2f} {r.batch:5d} {ms(r.cv2_ms)} {ms(r.cpu_ms)} {ms(r.gpu_ms)}"
            f" {ratio(r.cv2_ms, r.cpu_ms)} {ratio(r.cv2_ms, r.gpu_ms)} {agree}"
        )
    return "\n".join(lines)
