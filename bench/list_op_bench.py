"""One side of the A/B of issue 34, item 1 (the grabcut operator taking lists): times list and
batch calls of torchgrabcut.grabcut, to be run once per side with PYTHONPATH at that side's
package (a build of the older tree beside this one) and alternated, in one run.

    python bench/list_op_bench.py --device cpu [--threads 1] [--repeats 3]
    python bench/list_op_bench.py --device cuda [--repeats 5]

CPU: GrabCut-50 at native sizes as a numpy list (max_iter 0 and 1), the same images as a
list of (3, H, W) tensors (max_iter 0), and a (16, 3, 240, 320) batch (their top-left
corners, max_iter 0 and 1); medians of wall and process CPU seconds (CPU seconds say more
on a shared machine). CUDA: GrabCut-50 native as a numpy list, 512 crops of 80..480 px as a
numpy list (bench/list_call_bench.py's, sorted as the dataset job sorts them; max_iter 5
and 0), a (32, 3, 512, 512) CUDA batch and the same batch from the host; medians of wall
milliseconds with the GPU synchronised around each call. Prints one JSON line: the times and
a digest of the masks, which must be equal on both sides.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

import torchgrabcut

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "grabcut50"


def _load(data: Path) -> tuple[list[np.ndarray], list[tuple[int, int, int, int]]]:
    rows = list(csv.DictReader(open(data / "boxes.csv", encoding="utf-8")))
    images = [np.asarray(Image.open(data / "images" / r["name"]).convert("RGB"))[:, :, ::-1].copy() for r in rows]
    boxes = [(int(r["x0"]), int(r["y0"]), int(r["x1"]), int(r["y1"])) for r in rows]
    return images, boxes


def _timed(fn: Callable[[], Any], repeats: int, cuda: bool) -> tuple[float, float, Any]:
    """(median wall seconds, median process CPU seconds, the last output), after a warm-up."""
    out = fn()
    walls, cpus = [], []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        if cuda:
            torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def _digest(masks: Any) -> str:
    h = hashlib.sha1()
    for m in masks:
        h.update(np.ascontiguousarray(m.cpu().numpy() if isinstance(m, torch.Tensor) else m).tobytes())
    return h.hexdigest()[:10]


def cpu_cases(images: list[np.ndarray], boxes: list[tuple[int, int, int, int]], repeats: int) -> dict[str, Any]:
    res: dict[str, Any] = {}

    def case(name: str, fn: Callable[[], Any]) -> None:
        wall, cpu, out = _timed(fn, repeats, cuda=False)
        res[name] = (round(wall, 3), round(cpu, 3), _digest(out))

    for it in (0, 1):
        case(f"list50_iter{it}", lambda it=it: torchgrabcut.grabcut(images, box=boxes, device="cpu", max_iter=it))
    chw = [torch.from_numpy(im).permute(2, 0, 1).contiguous() for im in images]
    case("tensorlist50_iter0", lambda: torchgrabcut.grabcut(chw, box=boxes, max_iter=0))
    batch = torch.stack([c[:, :240, :320] for c in chw[:16]]).contiguous()
    for it in (0, 1):
        case(
            f"batch16x240x320_iter{it}",
            lambda it=it: torchgrabcut.grabcut(batch, box=[(20, 20, 300, 220)] * 16, max_iter=it),
        )
    return res


def cuda_cases(images: list[np.ndarray], boxes: list[tuple[int, int, int, int]], repeats: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from list_call_bench import _crops  # bench/ is not a package: found through sys.path

    res: dict[str, Any] = {}

    def case(name: str, fn: Callable[[], Any]) -> None:
        wall, _, out = _timed(fn, repeats, cuda=True)
        res[name] = (round(1e3 * wall, 2), _digest(out))

    case("grabcut50_native_list_ms", lambda: torchgrabcut.grabcut(images, box=boxes, device="cuda"))
    crops, crop_boxes = _crops(512)
    for it in (5, 0):
        case(
            f"crops512_list_iter{it}_ms",
            lambda it=it: torchgrabcut.grabcut(crops, box=crop_boxes, device="cuda", max_iter=it),
        )
    side = 512
    squares = [np.asarray(Image.fromarray(im).resize((side, side), Image.Resampling.BICUBIC)) for im in images[:32]]
    scaled = [
        (b[0] * side // im.shape[1], b[1] * side // im.shape[0], b[2] * side // im.shape[1], b[3] * side // im.shape[0])
        for b, im in zip(boxes, images[:32])
    ]
    host = torch.from_numpy(np.stack(squares)).permute(0, 3, 1, 2).contiguous()
    on_gpu, gpu_boxes = host.cuda(), torch.tensor(scaled).cuda()
    case("batch32x512_cuda_ms", lambda: list(torchgrabcut.grabcut(on_gpu, box=gpu_boxes)))
    case("batch32x512_host_to_cuda_ms", lambda: list(torchgrabcut.grabcut(host, box=scaled, device="cuda")))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--grabcut50", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    images, boxes = _load(args.grabcut50)
    cases = cuda_cases if args.device == "cuda" else cpu_cases
    header = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
    print(json.dumps({**header, "threads": torch.get_num_threads(), **cases(images, boxes, args.repeats)}))


if __name__ == "__main__":
    main()
