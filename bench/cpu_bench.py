"""The CPU backend against cv2.grabCut on real photos, side by side in one run.

    python bench/cpu_bench.py [--sizes 0.3,1,4] [--images 12] [--grabcut50 DIR]
    python bench/cpu_bench.py --maxflow [--images 12]
    python bench/cpu_bench.py --batch [--images 50] [--sizes 1]
    python bench/cpu_bench.py --dump DIR [--images 50] [--sizes 1]

The first GrabCut-50 images (read from ../shared/data/grabcut50, never copied) are
scaled to each size (bicubic; the box scaled with them). For every image the same
run times cv2.grabCut (reseeded, 5 iterations), torchgrabcut on one thread and on
every thread torch allows, and checks that our masks on 1 and on all threads are
equal. Only ratios measured this way mean anything on a shared machine.

With --maxflow it times the max-flow alone on the first graph of a GrabCut call (the
cold solve: t-links from the k-means model of the box, OpenCV's n-links), ours on
one thread against PyMaxflow (the reference Boykov-Kolmogorov) on the same integer
graph, graph construction excluded on both sides, and checks that flow values and
cuts are equal.

With --dump DIR it times nothing: it writes the first graph of each image's GrabCut
call (as --maxflow solves it) at the first of --sizes to DIR/NAME.tgcg, a graph file for
the torch-free benchmarks (bench_maxflow_cuda graphs DIR/*.tgcg: each graph's cold
solve under the max-flow schedules, its time and grid-wide barriers, issue 33's
per-image figures).

With --batch it times one list call of all the images (the batch path, which spreads
images over threads) on one thread and on every thread, alternating, and checks that
the masks are equal: how the CPU backend scales with cores.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from graph_file import write_graph_file

import torchgrabcut
from torchgrabcut.imageio import read_image
from torchgrabcut.tools.opencv_reference import cv2_grabcut_box
from torchgrabcut.tools.speed import scaled_image

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GRABCUT50 = ROOT.parent / "shared" / "data" / "grabcut50"
BoxT = tuple[int, int, int, int]
T = TypeVar("T")


def load_scaled(root: Path, count: int, megapixels: float) -> list[tuple[str, np.ndarray, BoxT]]:
    """(name, BGR image, box) of the first ``count`` images scaled to about ``megapixels``."""
    with open(root / "boxes.csv", newline="") as f:
        rows = list(csv.DictReader(f))[:count]
    out = []
    for row in rows:
        original = read_image(root / "images" / row["name"])
        h, w = original.shape[:2]
        img = scaled_image(original, megapixels)
        sx, sy = img.shape[1] / w, img.shape[0] / h
        x0, y0, x1, y1 = (int(row[k]) for k in ("x0", "y0", "x1", "y1"))
        box = (round(x0 * sx), round(y0 * sy), min(img.shape[1], round(x1 * sx)), min(img.shape[0], round(y1 * sy)))
        out.append((row["name"], img, box))
    return out


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    t = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t


def bench_calls(root: Path, sizes: list[float], count: int) -> None:
    import cv2

    all_threads = torch.get_num_threads()
    print(f"torch threads: {all_threads}; cv2 {cv2.__version__}; 5 iterations; seconds per image")
    for mp in sizes:
        items = load_scaled(root, count, mp)
        cv2_s, one_s, all_s = [], [], []
        for name, img, box in items:
            _, t_cv2 = timed(cv2_grabcut_box, cv2, img, box, 5, seed=0)
            torch.set_num_threads(1)
            one, t_one = timed(torchgrabcut.grabcut, img, box=box, device="cpu")
            torch.set_num_threads(all_threads)
            every, t_all = timed(torchgrabcut.grabcut, img, box=box, device="cpu")
            if not np.array_equal(one, every):
                raise AssertionError(f"{name}: the masks on 1 and {all_threads} threads differ")
            cv2_s.append(t_cv2)
            one_s.append(t_one)
            all_s.append(t_all)
            print(
                f"  {name:12s} {img.shape[0]}x{img.shape[1]}  cv2 {t_cv2:6.2f}  1 thread {t_one:6.2f}"
                f" ({t_cv2 / t_one:4.2f}x)  {all_threads} threads {t_all:6.2f} ({t_cv2 / t_all:4.2f}x)",
                flush=True,
            )
        ratios_one = [c / o for c, o in zip(cv2_s, one_s)]
        ratios_all = [c / a for c, a in zip(cv2_s, all_s)]
        print(
            f"{mp:g} MP, {len(items)} images: total cv2 {sum(cv2_s):.1f} s, 1 thread {sum(one_s):.1f} s"
            f" ({sum(cv2_s) / sum(one_s):.2f}x), {all_threads} threads {sum(all_s):.1f} s"
            f" ({sum(cv2_s) / sum(all_s):.2f}x); per image median {statistics.median(ratios_one):.2f}x /"
            f" {statistics.median(ratios_all):.2f}x, lowest {min(ratios_one):.2f}x / {min(ratios_all):.2f}x"
        )


def first_graph(img: np.ndarray, box: BoxT, gamma: float = 50.0) -> tuple[np.ndarray, np.ndarray]:
    """The integer graph of GrabCut's first cut (net terminals, 4 forward n-link planes)."""
    _, model = torchgrabcut.grabcut(img, box=box, max_iter=0, return_model=True, device="cpu")
    params = model.params.numpy()
    k = params.shape[0] // 2
    colour = img.astype(np.float64)  # the model is in the image's channel order

    def log_density(rows: np.ndarray) -> np.ndarray:
        total = np.zeros(colour.shape[:2])
        for r in rows:
            if r[0] <= 0:
                continue
            cov = r[4:13].reshape(3, 3)
            d = colour - r[1:4]
            q = np.einsum("hwi,ij,hwj->hw", d, np.linalg.inv(cov), d)
            total += r[0] / np.sqrt(np.linalg.det(cov)) * np.exp(-0.5 * q)
        return np.log(np.maximum(total, 1e-300))

    lam = 9 * gamma
    net = np.clip(log_density(params[k:]) - log_density(params[:k]), -lam, lam)
    h, w = colour.shape[:2]
    x0, y0, x1, y1 = box
    inside = np.zeros((h, w), bool)
    inside[y0:y1, x0:x1] = True
    terminal = np.rint(np.where(inside, net, -lam) * 256).astype(np.int32)
    offsets = [(0, 1), (1, 1), (1, 0), (1, -1)]
    squared = []
    for dy, dx in offsets:
        d2 = np.zeros((h, w))
        xs = slice(max(0, -dx), w - max(0, dx))
        xt = slice(max(0, dx), w + min(0, dx))
        diff = colour[: h - dy, xs] - colour[dy:, xt]
        d2[: h - dy, xs] = (diff * diff).sum(-1)
        squared.append((d2, xs, dy))
    pairs = 4 * w * h - 3 * w - 3 * h + 2
    beta = 1 / (2 * sum(s[0].sum() for s in squared) / pairs)
    nlinks = np.zeros((4, h, w), np.int32)
    for d, (d2, xs, dy) in enumerate(squared):
        g = gamma / np.sqrt(2) if d in (1, 3) else gamma
        plane = np.zeros((h, w), np.int32)
        plane[: h - dy, xs] = np.rint(g * np.exp(-beta * d2[: h - dy, xs]) * 256)
        nlinks[d] = plane
    return terminal, nlinks


def bench_maxflow(root: Path, megapixels: float, count: int) -> None:
    import maxflow

    torch.set_num_threads(1)
    print(f"max-flow alone, first (cold) graph, {megapixels:g} MP, one thread; ms")
    ours_s, ref_s = [], []
    for name, img, box in load_scaled(root, count, megapixels):
        terminal, nlinks = first_graph(img, box)
        t, nl = torch.from_numpy(terminal)[None], torch.from_numpy(nlinks)[None]
        torch.ops.torchgrabcut.maxflow_grid(t, nl)  # warm-up (allocation)
        (cut, flow), t_ours = timed(torch.ops.torchgrabcut.maxflow_grid, t, nl)
        g = maxflow.Graph[int]()
        ids = g.add_grid_nodes(terminal.shape)
        for d, (dy, dx) in enumerate([(0, 1), (1, 1), (1, 0), (1, -1)]):
            structure = np.zeros((3, 3), dtype=int)
            structure[1 + dy, 1 + dx] = 1
            g.add_grid_edges(ids, weights=nlinks[d].astype(np.int64), structure=structure, symmetric=True)
        g.add_grid_tedges(ids, np.maximum(terminal, 0).astype(np.int64), np.maximum(-terminal, 0).astype(np.int64))
        ref_flow, t_ref = timed(g.maxflow)
        if int(flow[0]) != ref_flow or not np.array_equal(cut[0].numpy(), ~g.get_grid_segments(ids)):
            raise AssertionError(f"{name}: flow or cut differs from PyMaxflow's")
        ours_s.append(t_ours)
        ref_s.append(t_ref)
        print(
            f"  {name:12s} ours {t_ours * 1e3:7.1f}  PyMaxflow {t_ref * 1e3:7.1f}  ({t_ref / t_ours:4.2f}x)", flush=True
        )
    ratios = [r / o for r, o in zip(ref_s, ours_s)]
    print(
        f"total ours {sum(ours_s):.2f} s, PyMaxflow {sum(ref_s):.2f} s ({sum(ref_s) / sum(ours_s):.2f}x);"
        f" per graph median {statistics.median(ratios):.2f}x, lowest {min(ratios):.2f}x"
    )


def bench_batch(root: Path, megapixels: float, count: int, rounds: int = 3) -> None:
    all_threads = torch.get_num_threads()
    items = load_scaled(root, count, megapixels)
    images = [img for _, img, _ in items]
    boxes = [box for _, _, box in items]
    print(f"batch of {len(images)} images at {megapixels:g} MP as one list call, 5 iterations; seconds", flush=True)
    times: dict[int, list[float]] = {1: [], all_threads: []}
    masks: dict[int, list[np.ndarray]] = {}
    for _ in range(rounds):
        for threads in (1, all_threads):
            torch.set_num_threads(threads)
            out, t = timed(torchgrabcut.grabcut, images, box=boxes, device="cpu")
            times[threads].append(t)
            print(f"  {threads} threads: {t:.2f} s", flush=True)
            masks[threads] = out
    torch.set_num_threads(all_threads)
    if not all(np.array_equal(a, b) for a, b in zip(masks[1], masks[all_threads])):
        raise AssertionError(f"the masks on 1 and {all_threads} threads differ")
    one, every = statistics.median(times[1]), statistics.median(times[all_threads])
    print(
        f"1 thread {one:.2f} s, {all_threads} threads {every:.2f} s (medians of {rounds}): {one / every:.2f}x;"
        f" {len(images) / every:.1f} images/s"
    )


def dump_graphs(root: Path, megapixels: float, count: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, img, box in load_scaled(root, count, megapixels):
        terminal, nlinks = first_graph(img, box)
        path = out / f"{Path(name).stem}.tgcg"
        write_graph_file(path, terminal, nlinks)
        print(path, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1", help="megapixels, comma-separated (default 1)")
    parser.add_argument("--images", type=int, default=12, help="first N GrabCut-50 images (default 12)")
    parser.add_argument("--grabcut50", type=Path, default=DEFAULT_GRABCUT50)
    parser.add_argument("--maxflow", action="store_true", help="the max-flow alone against PyMaxflow")
    parser.add_argument("--batch", action="store_true", help="one list call on 1 thread against all threads")
    parser.add_argument("--rounds", type=int, default=3, help="--batch: rounds of both (default 3)")
    parser.add_argument("--dump", type=Path, help="write the first graphs as graph files to this folder instead")
    args = parser.parse_args()
    if not (args.grabcut50 / "boxes.csv").is_file():
        sys.exit(f"GrabCut-50 not found at {args.grabcut50} (--grabcut50 DIR)")
    sizes = [float(s) for s in args.sizes.split(",")]
    if args.dump is not None:
        dump_graphs(args.grabcut50, sizes[0], args.images, args.dump)
    elif args.maxflow:
        for mp in sizes:
            bench_maxflow(args.grabcut50, mp, args.images)
    elif args.batch:
        for mp in sizes:
            bench_batch(args.grabcut50, mp, args.images, max(1, args.rounds))
    else:
        bench_calls(args.grabcut50, sizes, args.images)


if __name__ == "__main__":
    main()
