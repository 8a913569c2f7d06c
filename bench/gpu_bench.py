"""GPU benchmark of issue 3, run by scripts/gpu_check.sh on the GPU machine.

Side by side in one run: cv2.grabCut on the machine's CPU, our CPU backend and
our CUDA backend (CUDA events, warm-up, median), 5 iterations:
  A. one 1024x1024 real image (a GrabCut-50 image scaled up), one box;
  B. all 50 GrabCut-50 images at native size as one batch (a list);
  C. one 4096x4096 image (working set: torch.cuda.max_memory_allocated).
cv2 is single-threaded: for B it runs in a pool of processes and the table
shows the sum of its per-image times (what one core would take).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from torchgrabcut import grabcut
from torchgrabcut.tools.evaluate import foreground_iou, load_dataset
from torchgrabcut.tools.opencv_reference import cv2_grabcut_box
from torchgrabcut.tools.speed import gpu_median_ms, scaled_image


def cv2_once(args: tuple[np.ndarray, tuple[int, int, int, int], int]) -> tuple[float, np.ndarray]:
    import cv2

    img, box, iters = args
    t = time.perf_counter()
    try:
        mask = cv2_grabcut_box(cv2, img, box, iters, seed=0)
    except cv2.error:  # cross.jpg: the box leaves no background; timed up to the raise
        mask = np.zeros(img.shape[:2], np.uint8)
        mask[box[1] : box[3], box[0] : box[2]] = 3
    return (time.perf_counter() - t) * 1e3, mask


def wall_ms(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def scale_box(box: tuple[int, int, int, int], sy: float, sx: float) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    return int(x0 * sx), int(y0 * sy), int(np.ceil(x1 * sx)), int(np.ceil(y1 * sy))


def same_fraction(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    same = sum(int((x == y).sum()) for x, y in zip(a, b))
    return same / sum(x.size for x in a)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.environ.get("TORCHGRABCUT_GRABCUT50", "data/grabcut50"))
    parser.add_argument("--out", default="bench.md")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--skip-cpu", action="store_true")
    args = parser.parse_args()
    it = args.iters
    items = load_dataset(args.data)
    rows = []

    # A: 1024 x 1024.
    base = items[0]
    img_a = np.ascontiguousarray(scaled_image(base.image, 1.0 * 1024 * 1024 / 1e6)[:1024, :1024])
    img_a = np.ascontiguousarray(
        np.pad(img_a, ((0, 1024 - img_a.shape[0]), (0, 1024 - img_a.shape[1]), (0, 0)), "edge")
    )
    box_a = scale_box(base.box, 1024 / base.image.shape[0], 1024 / base.image.shape[1])
    box_a = (box_a[0], box_a[1], min(box_a[2], 1024), min(box_a[3], 1024))
    cv2_a, cv2_mask_a = cv2_once((img_a, box_a, it))
    cpu_mask_a = grabcut(img_a, box=box_a, max_iter=it, device="cpu")
    cpu_a = None if args.skip_cpu else wall_ms(lambda: grabcut(img_a, box=box_a, max_iter=it, device="cpu"))
    t_a = torch.from_numpy(img_a).permute(2, 0, 1).contiguous().cuda()
    g_a = gpu_median_ms(lambda: grabcut(t_a, box=box_a, max_iter=it), 10)
    gpu_mask_a = grabcut(t_a, box=box_a, max_iter=it).cpu().numpy()
    rows.append(("1024x1024", 1, cv2_a, cpu_a, g_a, same_fraction([gpu_mask_a], [cpu_mask_a])))

    # B: the 50 images, native sizes, one batch.
    imgs = [x.image for x in items]
    boxes = [x.box for x in items]
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as pool:
        cv2_res = list(pool.map(cv2_once, [(x, b, it) for x, b in zip(imgs, boxes)]))
    cv2_b = sum(r[0] for r in cv2_res)
    t0 = time.perf_counter()
    cpu_masks = grabcut(imgs, box=boxes, max_iter=it, device="cpu")
    cpu_b = (time.perf_counter() - t0) * 1e3
    t_imgs = [torch.from_numpy(x).permute(2, 0, 1).contiguous().cuda() for x in imgs]
    g_b = gpu_median_ms(lambda: grabcut(t_imgs, box=boxes, max_iter=it), 10)
    gpu_masks = [m.cpu().numpy() for m in grabcut(t_imgs, box=boxes, max_iter=it)]
    rows.append(("GrabCut-50 native", 50, cv2_b, cpu_b, g_b, same_fraction(gpu_masks, cpu_masks)))

    # C: 4096 x 4096.
    img_c = np.ascontiguousarray(np.kron(img_a, np.ones((4, 4, 1), np.uint8)))
    rng = np.random.default_rng(0)
    img_c = np.clip(img_c.astype(np.int16) + rng.integers(-3, 4, img_c.shape), 0, 255).astype(np.uint8)
    box_c = tuple(4 * v for v in box_a)
    t_c = torch.from_numpy(img_c).permute(2, 0, 1).contiguous().cuda()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    g_c = gpu_median_ms(lambda: grabcut(t_c, box=box_c, max_iter=it), 5, warmup=1)
    peak = torch.cuda.max_memory_allocated() - before
    rows.append(("4096x4096", 1, None, None, g_c, None))

    def f(v: float | None, fmt: str = "{:.1f}") -> str:
        return "-" if v is None else fmt.format(v)

    lines = [
        "| image size | batch | cv2 ms | our CPU ms | our GPU ms | cv2/GPU | CPU/GPU | GPU=CPU pixels |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, batch, cv2_ms, cpu_ms, g, same in rows:
        lines.append(
            f"| {name} | {batch} | {f(cv2_ms)} | {f(cpu_ms)} | {g:.2f} | "
            f"{f(cv2_ms / g if cv2_ms else None, '{:.0f}x')} | {f(cpu_ms / g if cpu_ms else None, '{:.0f}x')} | "
            f"{f(100 * same if same is not None else None, '{:.4f}%')} |"
        )
    lines.append(
        f"\n4096x4096 GPU working set: {peak / 2**20:.0f} MiB = {peak / 4096**2:.1f} bytes/pixel "
        "(max_memory_allocated beyond the input)"
    )
    lines.append(f"cv2 vs our CPU foreground IoU on A: {foreground_iou(cv2_mask_a, cpu_mask_a):.3f}")
    lines.append(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, {os.cpu_count()} CPU cores")
    text = "\n".join(lines)
    Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
