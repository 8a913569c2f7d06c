"""The GPU working set of one call, in bytes per pixel, and its time (CUDA events).

torch.cuda.max_memory_allocated beyond the input, for one image (1024x1024 and
4096x4096: a GrabCut-50 image scaled up, with a little noise so that the larger one
is not made of flat 4x4 blocks) and for GrabCut-50 at native sizes as one list; 5
iterations from the image's box. The quick form of gpu_bench.py's section C (no cv2,
no CPU runs), for checking what the workspace costs.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch
from grabcut50_ppm import scale_box

from torchgrabcut import grabcut
from torchgrabcut.tools.evaluate import load_dataset
from torchgrabcut.tools.speed import gpu_median_ms


def scaled(image: np.ndarray, box: tuple[int, int, int, int], side: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """image resized (nearest) to side x side with a little noise, and its box scaled."""
    h, w = image.shape[:2]
    rows = np.arange(side) * h // side
    cols = np.arange(side) * w // side
    out = image[rows][:, cols].astype(np.int16)
    out += np.random.default_rng(0).integers(-3, 4, out.shape, dtype=np.int16)
    scaled_box = scale_box(box, side / h, side / w, side, side)
    return np.ascontiguousarray(np.clip(out, 0, 255).astype(np.uint8)), scaled_box


def measure(images: list[torch.Tensor], boxes: list[tuple[int, ...]], iters: int) -> tuple[float, float]:
    """(ms, bytes per pixel) of one grabcut call on these CUDA images."""
    pixels = sum(x.shape[1] * x.shape[2] for x in images)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    one = images[0] if len(images) == 1 else images
    box = boxes[0] if len(boxes) == 1 else boxes
    ms = gpu_median_ms(lambda: grabcut(one, box=box, max_iter=iters), 5, warmup=1)
    return ms, (torch.cuda.max_memory_allocated() - before) / pixels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("TORCHGRABCUT_GRABCUT50", "data/grabcut50"))
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args()
    items = load_dataset(args.data)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for side in (1024, 4096):
        img, box = scaled(items[0].image, items[0].box, side)
        t = torch.from_numpy(img).permute(2, 0, 1).contiguous().cuda()
        ms, per_pixel = measure([t], [box], args.iters)
        print(f"{side}x{side}: {ms:8.2f} ms  working set {per_pixel:5.1f} bytes/pixel")
    imgs = [torch.from_numpy(x.image).permute(2, 0, 1).contiguous().cuda() for x in items]
    ms, per_pixel = measure(imgs, [x.box for x in items], args.iters)
    print(f"GrabCut-50 native, one list: {ms:8.2f} ms  working set {per_pixel:5.1f} bytes/pixel")


if __name__ == "__main__":
    main()
