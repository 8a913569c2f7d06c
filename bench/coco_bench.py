"""Throughput of `torchgrabcut dataset` (boxes per second) on a generated COCO-like set.

The set (tests/python/synthetic_coco.py, no download, the same every time): N
JPEG images of 640x480 with 5..15 objects each, boxes of 50..400 px, polygon or
RLE ground truth. It is generated once into --workdir and reused. The job runs
as the CLI runs it (DataLoader workers decoding, batches on the device, RLE and
IoU in a thread, part files, merge); the time is the whole run_dataset call
after a warm-up call that starts the device. Last line:

    coco_bench: N boxes, T s, X boxes/s (device)

Goal on one H200: >= 1000 boxes/s. The default set is 1000 images (~9600 boxes):
a throughput, so start-up (worker processes, the first batch's images, ~0.5 s)
should not be a quarter of the run, as it is on 200 images. Examples:
    python bench/coco_bench.py                                  # 1000 images, cuda when usable
    python bench/coco_bench.py --images 200                      # the smaller set
    python bench/coco_bench.py --batch-size 64,128,256          # a sweep: one line per size
    python bench/coco_bench.py --images 4 --device cpu          # smoke test
    python bench/coco_bench.py --host-only                       # the host's ceiling
    python bench/coco_bench.py --photos ../shared/data/grabcut50 # real photos (bench/photo_coco.py)

--photos DIR runs the job on real photos with ground truth instead (a folder laid out as
GrabCut-50 is; --boxes-per-photo jittered boxes of each photo's object, 40 by default:
2000 boxes on GrabCut-50), read where they are.

--host-only replaces GrabCut by a stand-in that returns each box as its mask at
once, so the run measures everything else (reading, cropping, RLE, IoU, part
files): the most boxes per second this machine's host can feed the device.
--gpu-busy records the run's GPU kernels (torch.profiler, CUDA activity only)
and prints how much of the run the GPU was computing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import torchgrabcut.api
from torchgrabcut import grabcut
from torchgrabcut.dataset.job import DatasetOptions, run_dataset
from torchgrabcut.dataset.parts import parts_dir
from torchgrabcut.dataset.timing import time_covered
from torchgrabcut.device import resolve_device

# The set is the tests' generator (tests/python/synthetic_coco.py): the benchmark runs on what the tests check.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from photo_coco import make_photo_coco  # bench/, beside this file
from synthetic_coco import make_synthetic_coco


def _box_masks(crops: list[np.ndarray], box: list[tuple[int, int, int, int]], **_: object) -> list[np.ndarray]:
    """The --host-only stand-in for grabcut: each crop's box as probable foreground."""
    masks = []
    for crop, (x0, y0, x1, y1) in zip(crops, box):
        m = np.zeros(crop.shape[:2], dtype=np.uint8)
        m[y0:y1, x0:x1] = 3
        masks.append(m)
    return masks


def _print_gpu_busy(prof: torch.profiler.profile, seconds: float) -> None:
    """The kernels' time, and how much of the run at least one kernel was running."""
    spans = [
        (e.time_range.start, e.time_range.end)
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and "memcpy" not in e.name.lower()
    ]
    if not spans:
        print("gpu busy: no kernels recorded")
        return
    busy = time_covered(spans)
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    print(
        f"gpu busy: kernels {sum(b - a for a, b in spans) / 1e6:.2f} s, some kernel running {busy / 1e6:.2f} s of "
        f"{(last - first) / 1e6:.2f} s between the first and the last ({100 * busy / max(last - first, 1):.0f}%); "
        f"run {seconds:.2f} s"
    )


def _dataset(workdir: Path, n_images: int, seed: int) -> Path:
    """The generated set for these arguments, made once."""
    root = workdir / f"coco_like_{n_images}_{seed}"
    path = root / "instances.json"
    if not path.is_file():
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        make_synthetic_coco(root, n_images, seed=seed)
        print(f"generated {n_images} images in {time.perf_counter() - t:.1f} s: {root}", flush=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=1000, help="images in the generated set (default 1000)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when usable)")
    parser.add_argument(
        "--batch-size",
        default="128",
        help="boxes per GrabCut call; several, comma-separated, for a sweep (default 128)",
    )
    parser.add_argument("--workers", type=int, default=4, help="image-reading processes (default 4)")
    parser.add_argument("--max-iter", type=int, default=5, help="GrabCut iterations (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated set (default 0)")
    parser.add_argument(
        "--host-only", action="store_true", help="GrabCut replaced by an instant stand-in: the host's ceiling"
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        metavar="S",
        help="the interpreter's thread switch interval in seconds (sys.setswitchinterval; default Python's 0.005)",
    )
    parser.add_argument(
        "--gpu-busy", action="store_true", help="also print the share of the run the GPU spent in kernels"
    )
    parser.add_argument(
        "--photos", type=Path, default=None, help="real photos with ground truth (images/, gt/) instead of the set"
    )
    parser.add_argument("--boxes-per-photo", type=int, default=40, help="with --photos: boxes a photo (default 40)")
    parser.add_argument("--workdir", default=None, help="where to keep the generated set (default: a temp dir)")
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.gettempdir()) / "torchgrabcut_coco_bench"
    workdir.mkdir(parents=True, exist_ok=True)
    if args.photos is not None:
        coco = make_photo_coco(args.photos, workdir / "photos", boxes_per_photo=args.boxes_per_photo, seed=args.seed)
        image_dir = args.photos / "images"
    else:
        coco = _dataset(workdir, args.images, args.seed)
        image_dir = coco.parent / "images"
    dev = resolve_device(args.device)
    rng = np.random.default_rng(0)
    warm = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    grabcut([warm, warm[:40]], box=[(8, 8, 56, 56), (8, 8, 56, 30)], device=dev)  # start the device
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)

    if args.host_only:
        torchgrabcut.api.grabcut = _box_masks  # the job looks it up at each call

    try:
        batch_sizes = [int(b) for b in args.batch_size.split(",")]
    except ValueError:
        parser.error(f"--batch-size: expected integers, comma-separated, got {args.batch_size!r}")
    n_anns = len(json.loads(coco.read_text())["annotations"])
    for batch_size in batch_sizes:
        out = workdir / "out.json"
        shutil.rmtree(parts_dir(out), ignore_errors=True)  # left by an interrupted bench: start from scratch
        opts = DatasetOptions(
            coco,
            image_dir,
            out,
            device=str(dev),
            batch_size=batch_size,
            workers=args.workers,
            max_iter=args.max_iter,
            quiet=True,
        )
        if args.gpu_busy and dev.type == "cuda":
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                summary = run_dataset(opts)
            _print_gpu_busy(prof, summary.seconds if summary else 0.0)
        else:
            summary = run_dataset(opts)
        assert summary is not None
        assert summary.run_boxes == n_anns, "the bench must segment every box, from scratch"
        print(summary.format())
        stages = ", ".join(f"{k} {v:.2f}" for k, v in summary.stages.items())
        print(f"batch size {batch_size}; seconds: {stages}")
        print(
            f"coco_bench: {summary.run_boxes} boxes, {summary.seconds:.2f} s, "
            f"{summary.boxes_per_second:.1f} boxes/s ({'host only' if args.host_only else dev.type})",
            flush=True,
        )


if __name__ == "__main__":
    main()
