"""Where the time of one GPU call on a list of host crops goes (the dataset job's call).

512 (or --count) random crops of 80..480 px, sorted by shape as the dataset job
sorts them, segmented in one `grabcut(list, box=..., device="cuda")` call; then
the same call with max_iter=0 (everything but the iterations), and the transfers
alone: the crops up one by one, the padded mask batch down. Wall-clock medians of
5 after a warm-up, the GPU synchronised around each. Needs a CUDA GPU.

    python bench/list_call_bench.py [--count 512] [--profile]

--profile adds torch.profiler's table of the call's GPU kernels (total CUDA time
per kernel name, one call after the timings) and each max-flow solve's time in
launch order (the first iteration's solve is cold, the later ones warm).
--coco N takes the crops from N generated COCO-like images instead (every box,
cut with the dataset job's margins), the crops the dataset job sends.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import torch

from torchgrabcut import grabcut


def _crops(count: int) -> tuple[list[np.ndarray], list[tuple[int, int, int, int]]]:
    rng = np.random.default_rng(0)
    crops, boxes = [], []
    for _ in range(count):
        h, w = int(rng.integers(80, 480)), int(rng.integers(80, 480))
        im = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        im[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4] //= 3
        crops.append(im)
        boxes.append((w // 8, h // 8, w - w // 8, h - h // 8))
    return _sorted_by_shape(crops, boxes)


def _sorted_by_shape(
    crops: list[np.ndarray], boxes: list[tuple[int, int, int, int]]
) -> tuple[list[np.ndarray], list[tuple[int, int, int, int]]]:
    """Crops and their boxes in the dataset job's order: by orientation, then longer side."""
    order = sorted(range(len(crops)), key=lambda i: (crops[i].shape[0] >= crops[i].shape[1], max(crops[i].shape[:2])))
    return [crops[i] for i in order], [boxes[i] for i in order]


def _coco_crops(images: int, count: int) -> tuple[list[np.ndarray], list[tuple[int, int, int, int]]]:
    """Crops and boxes of the dataset job on a generated set, sorted as the job sorts them."""
    import sys
    import tempfile
    from pathlib import Path

    from torchgrabcut.dataset.plan import box_crop
    from torchgrabcut.imageio import read_image

    # The dataset job's tests generate the same set (tests/python/synthetic_coco.py).
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
    from synthetic_coco import make_synthetic_coco

    crops, boxes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_synthetic_coco(root, images, seed=3)
        coco = json.loads((root / "instances.json").read_text())
        files = {im["id"]: im["file_name"] for im in coco["images"]}
        decoded: dict[object, np.ndarray] = {}  # each image read once, not once per box
        for ann in coco["annotations"]:
            if ann["image_id"] not in decoded:
                decoded[ann["image_id"]] = read_image(root / "images" / files[ann["image_id"]])
            img = decoded[ann["image_id"]]
            plan = box_crop(ann["bbox"], img.shape[1], img.shape[0], 0.1, 8)
            if isinstance(plan, str):
                continue
            (cx0, cy0, cx1, cy1), box = plan
            crops.append(np.ascontiguousarray(img[cy0:cy1, cx0:cx1]))
            boxes.append(box)
            if len(crops) == count:
                break
    return _sorted_by_shape(crops, boxes)


def _median_ms(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return sorted(times)[runs // 2] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=512, help="crops in the call (default 512)")
    parser.add_argument("--profile", action="store_true", help="also print the call's kernels by GPU time")
    parser.add_argument("--coco", type=int, default=0, metavar="N", help="crops of N generated COCO-like images")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("list_call_bench: needs a CUDA GPU")
    dev = torch.device("cuda")
    crops, boxes = _coco_crops(args.coco, args.count) if args.coco else _crops(args.count)
    ph = max(c.shape[0] for c in crops)
    pw = max(c.shape[1] for c in crops)
    grabcut(crops[:4], box=boxes[:4], device=dev)  # start the device

    def upload_one_by_one() -> None:
        batch = torch.zeros((len(crops), 3, ph, pw), dtype=torch.uint8, device=dev)
        for i, im in enumerate(crops):
            batch[i, :, : im.shape[0], : im.shape[1]] = torch.from_numpy(im).permute(2, 0, 1).to(dev)

    padded = torch.zeros((len(crops), ph, pw), dtype=torch.uint8, device=dev)
    full = _median_ms(lambda: grabcut(crops, box=boxes, device=dev))
    setup = _median_ms(lambda: grabcut(crops, box=boxes, device=dev, max_iter=0))
    up = _median_ms(upload_one_by_one)
    down = _median_ms(lambda: padded.cpu().numpy())
    print(
        f"list_call_bench: {len(crops)} crops (padded {ph}x{pw}): call {full:.1f} ms, max_iter=0 {setup:.1f} ms; "
        f"alone: crops up one by one {up:.1f} ms, padded masks down {down:.1f} ms",
        flush=True,
    )
    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            grabcut(crops, box=boxes, device=dev)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))
        solves = [
            e.time_range.elapsed_us() / 1000
            for e in sorted(prof.events(), key=lambda e: e.time_range.start)
            if e.device_type == torch.autograd.DeviceType.CUDA and "maxflow_kernel" in e.name
        ]
        print("list_call_bench: max-flow solves in launch order (ms): " + " ".join(f"{t:.1f}" for t in solves))


if __name__ == "__main__":
    main()
