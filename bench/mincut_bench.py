"""torchgrabcut.mincut against PyMaxflow on segmentation graphs, side by side in one run.

    python bench/mincut_bench.py [--images 6] [--size 1024] [--connectivity 4,8] [--threads 1] [--batch N]
    python bench/mincut_bench.py --device cuda [--batch 512 --size 256]
    python bench/mincut_bench.py --volume 128 [--repeats 3] [--device cuda]
    python bench/mincut_bench.py --dump DIR    (the 2D graphs as files for the torch-free
                                                models: bench/model_maxflow_tiles graphs ...)

The graphs are those of torchmaxflow's formulation, built from the first GrabCut-50
photos (read from ../shared/data/grabcut50) resized to size x size: a foreground
probability p from the box, blurred (Gaussian, --blur px) with noise (--noise) added
before (--noise-first) or after the blur; unary source = -log(1 - p), sink = -log(p);
a contrast-sensitive Potts term lam * exp(-|dI|^2 / (2 sigma^2)) / distance on the
grey level, sigma = --sigma-fraction * std(I); all times --scale and rounded, so both
sides solve the same integer graph. For every graph the same run times, on the CPU:

  call          torchgrabcut.mincut(source, sink, edges) on int32 tensors, the whole call
  op            the operator alone (torch.ops.torchgrabcut.mincut_grid): the call less the
                Python checks
  maxflow_grid  the hidden operator on the same graph already in its form (net terminals,
                n-links (1, 4, H, W)): its checks, a copy of the n-links, a fresh solver
  pymaxflow     PyMaxflow's maxflow() alone, its graph built before the clock starts

and checks that the flow values are equal; with --batch N, also one call on a batch of N
graphs (the photos' graphs in turn) on one thread against --threads threads. Each time
is the best of --repeats. With --device cuda it times the call on the GPU (synchronised) and, with --batch, a batch of
that many graphs (the images cycled) in one call, and PyMaxflow's solve of each graph
on one CPU core of the same machine where PyMaxflow is installed. With --volume N it
times a 3D 6-connected N^3 volume on the CPU instead: a noisy ellipsoid, unary from
its noisy probability, contrast-sensitive weights on the noisy intensity; with --device
cuda as well on the GPU (synchronised), its cut and flow checked equal to the CPU's.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from graph_file import write_graph_file
from PIL import Image, ImageFilter

import torchgrabcut
from torchgrabcut.graphcut import NEIGHBOURS
from torchgrabcut.imageio import read_image

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GRABCUT50 = ROOT.parent / "shared" / "data" / "grabcut50"


def segmentation_scene(
    image: np.ndarray, box: tuple[int, int, int, int], args: argparse.Namespace, seed: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """(grey level, foreground probability, sigma) of one photo at args.size x args.size."""
    n = args.size
    h, w = image.shape[:2]
    rgb = np.asarray(Image.fromarray(image[:, :, ::-1]).resize((n, n), Image.Resampling.BICUBIC)).astype(np.float64)
    x0, y0, x1, y1 = box
    mask = np.zeros((h, w), np.uint8)
    mask[y0:y1, x0:x1] = 255
    p = np.asarray(Image.fromarray(mask).resize((n, n), Image.Resampling.BILINEAR)).astype(np.float64) / 255
    rng = np.random.default_rng(seed)
    if args.noise_first:
        p = np.clip(p + rng.normal(0, args.noise, p.shape), 0, 1)
    p = np.asarray(Image.fromarray(np.uint8(np.rint(p * 255))).filter(ImageFilter.GaussianBlur(args.blur))) / 255
    if not args.noise_first:
        p = p + rng.normal(0, args.noise, p.shape)
    p = np.clip(p, 1e-3, 1 - 1e-3)
    grey = rgb.mean(2)
    return grey, p, float(args.sigma_fraction * grey.std() + 1e-9)


def segmentation_graph(
    image: np.ndarray, box: tuple[int, int, int, int], args: argparse.Namespace, k: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, sink, edges) int32 of segmentation_scene's Potts energy, K = k edges per pixel."""
    n = args.size
    grey, p, sigma = segmentation_scene(image, box, args, seed)
    source = np.rint(-np.log(1 - p) * args.scale).astype(np.int32)
    sink = np.rint(-np.log(p) * args.scale).astype(np.int32)
    edges = np.zeros((k, n, n), np.int32)
    for d, (dy, dx) in enumerate(NEIGHBOURS[k]):
        lo, hi = max(0, -dx), n - max(0, dx)
        diff = grey[: n - dy, lo:hi] - grey[dy:, lo + dx : hi + dx]
        weight = args.lam * np.exp(-(diff**2) / (2 * sigma**2)) / np.hypot(dy, dx)
        edges[d, : n - dy, lo:hi] = np.rint(weight * args.scale)
    return source, sink, edges


def best(fn: Callable[[], Any], repeats: int, sync: Callable[[], None] = lambda: None) -> tuple[Any, float]:
    result, times = None, []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        result = fn()
        sync()
        times.append(time.perf_counter() - t)
    return result, min(times)


def pymaxflow_solve(source: np.ndarray, sink: np.ndarray, edges: np.ndarray) -> tuple[int, float]:
    import maxflow

    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(source.shape)
    for d, (dy, dx) in enumerate(NEIGHBOURS[len(edges)]):
        structure = np.zeros((3, 3), dtype=int)
        structure[1 + dy, 1 + dx] = 1
        g.add_grid_edges(ids, weights=edges[d].astype(np.int64), structure=structure, symmetric=True)
    g.add_grid_tedges(ids, source.astype(np.int64), sink.astype(np.int64))
    t = time.perf_counter()
    flow = g.maxflow()
    return int(flow), time.perf_counter() - t


def solver_form(source: torch.Tensor, sink: torch.Tensor, edges: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """maxflow_grid's inputs: net terminals and n-links in its direction order (right, down-right, down, down-left)."""
    net = (source - sink)[None].contiguous()
    nl = torch.zeros((1, 4, *source.shape), dtype=torch.int32)
    order = {2: [0, 2], 4: [0, 2, 1, 3]}[edges.shape[0]]
    for k, d in enumerate(order):
        nl[0, d] = edges[k]
    return net, nl


Item = tuple[str, np.ndarray, tuple[int, int, int, int]]


def load(root: Path, count: int) -> list[Item]:
    with open(root / "boxes.csv", newline="") as f:
        rows = list(csv.DictReader(f))[:count]
    items: list[Item] = []
    for row in rows:
        x0, y0, x1, y1 = (int(row[k]) for k in ("x0", "y0", "x1", "y1"))
        items.append((row["name"], read_image(root / "images" / row["name"]), (x0, y0, x1, y1)))
    return items


def bench_cpu(items: list[Item], args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    print(f"CPU, {torch.get_num_threads()} thread(s), {args.size}x{args.size}, best of {args.repeats}; ms")
    for k in args.ks:
        ratios = []
        graphs = [segmentation_graph(image, box, args, k, i) for i, (_, image, box) in enumerate(items)]
        for (name, _, _), (s, t, e) in zip(items, graphs, strict=True):
            st, tt, et = (torch.from_numpy(x) for x in (s, t, e))
            net, nl = solver_form(st, tt, et)
            ref_flow, t_ref = pymaxflow_solve(s, t, e)
            r, t_call = best(partial(torchgrabcut.mincut, st, tt, et), args.repeats)
            _, t_op = best(partial(torch.ops.torchgrabcut.mincut_grid, st[None], tt[None], et[None]), args.repeats)
            _, t_mf = best(partial(torch.ops.torchgrabcut.maxflow_grid, net, nl), args.repeats)
            if int(r.flow) != ref_flow:
                raise AssertionError(f"{name}: flow {int(r.flow)} differs from PyMaxflow's {ref_flow}")
            ratios.append(t_ref / t_call)
            print(
                f"  {k * 2}-conn {name:12s} call {t_call * 1e3:7.1f}  op {t_op * 1e3:7.1f}  maxflow_grid"
                f" {t_mf * 1e3:7.1f}  pymaxflow {t_ref * 1e3:7.1f}  (pymaxflow / call {t_ref / t_call:4.2f}x)",
                flush=True,
            )
        print(
            f"{k * 2}-connected: PyMaxflow solve / our call, median {statistics.median(ratios):.2f}x, "
            f"lowest {min(ratios):.2f}x"
        )
        if args.batch:
            cpu_batch_threads(graphs, args, k)


def cpu_batch_threads(
    graphs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], args: argparse.Namespace, k: int
) -> None:
    """One call on a batch of --batch graphs (the photos' graphs in turn), 1 thread against all."""
    idx = [i % len(graphs) for i in range(args.batch)]
    st, tt, et = (torch.from_numpy(np.stack([graphs[i][j] for i in idx])) for j in range(3))
    times = {}
    for threads in (1, args.threads):
        torch.set_num_threads(threads)
        _, times[threads] = best(partial(torchgrabcut.mincut, st, tt, et), args.repeats)
    torch.set_num_threads(args.threads)
    print(
        f"  {k * 2}-conn batch of {args.batch}: 1 thread {times[1] * 1e3:.1f} ms, {args.threads} threads"
        f" {times[args.threads] * 1e3:.1f} ms ({times[1] / times[args.threads]:.2f}x)",
        flush=True,
    )


def bench_cuda(items: list[Item], args: argparse.Namespace) -> None:
    sync = torch.cuda.synchronize
    print(f"{torch.cuda.get_device_name()}, {args.size}x{args.size}, best of {args.repeats}; ms")
    for k in args.ks:
        graphs = [segmentation_graph(image, box, args, k, i) for i, (_, image, box) in enumerate(items)]
        for name_graph, (s, t, e) in zip(items, graphs, strict=True):
            st, tt, et = (torch.from_numpy(x).cuda() for x in (s, t, e))
            torchgrabcut.mincut(st, tt, et)
            r, t_gpu = best(partial(torchgrabcut.mincut, st, tt, et), args.repeats, sync)
            cpu = torchgrabcut.mincut(*(torch.from_numpy(x) for x in (s, t, e)))
            if not (torch.equal(r.cut.cpu(), cpu.cut) and int(r.flow) == int(cpu.flow)):
                raise AssertionError(f"{name_graph[0]}: GPU and CPU differ")
            try:
                ref_flow, t_ref = pymaxflow_solve(s, t, e)
            except ImportError:
                ref = "(PyMaxflow not installed)"
            else:
                if ref_flow != int(cpu.flow):
                    raise AssertionError(f"{name_graph[0]}: flow differs from PyMaxflow's")
                ref = f"PyMaxflow solve {t_ref * 1e3:7.1f} ({t_ref / t_gpu:6.1f}x)"
            print(f"  {k * 2}-conn {name_graph[0]:12s} GPU call {t_gpu * 1e3:7.2f}  {ref}", flush=True)
        if args.batch:
            idx = [i % len(graphs) for i in range(args.batch)]
            st, tt, et = (torch.from_numpy(np.stack([graphs[i][j] for i in idx])).cuda() for j in range(3))
            torchgrabcut.mincut(st, tt, et)
            _, t_batch = best(partial(torchgrabcut.mincut, st, tt, et), args.repeats, sync)
            print(f"  {k * 2}-conn batch of {args.batch}: {t_batch * 1e3:.1f} ms, {args.batch / t_batch:,.0f} graphs/s")


def volume_scene(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(intensity, foreground probability, sigma) of a noisy ellipsoid in an n^3 volume."""
    rng = np.random.default_rng(seed)
    zz, yy, xx = np.indices((n, n, n)) / n
    inside = ((zz - 0.5) / 0.35) ** 2 + ((yy - 0.5) / 0.3) ** 2 + ((xx - 0.5) / 0.25) ** 2 < 1
    intensity = np.where(inside, 0.7, 0.3) + rng.normal(0, 0.1, inside.shape)
    p = np.clip(np.where(inside, 0.8, 0.2) + rng.normal(0, 0.2, inside.shape), 1e-3, 1 - 1e-3)
    return intensity, p, float(intensity.std() / 2)


def volume_graph(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, sink, edges (3, n, n, n)) int32 of volume_scene's Potts energy (lamda 5, x 100), 6-connected."""
    intensity, p, sigma = volume_scene(n, seed)
    source = np.rint(-np.log(1 - p) * 100).astype(np.int32)
    sink = np.rint(-np.log(p) * 100).astype(np.int32)
    edges = np.zeros((3, n, n, n), np.int32)
    for k, axis in enumerate((2, 1, 0)):  # x + 1, y + 1, z + 1
        diff = np.diff(intensity, axis=axis)
        weight = np.rint(500 * np.exp(-(diff**2) / (2 * sigma**2))).astype(np.int32)
        index = [slice(None)] * 3
        index[axis] = slice(0, n - 1)
        edges[k][tuple(index)] = weight
    return source, sink, edges


def pymaxflow_volume(source: np.ndarray, sink: np.ndarray, edges: np.ndarray) -> tuple[int, float, float]:
    """PyMaxflow's flow, its solve's seconds and its grid construction's."""
    import maxflow

    t0 = time.perf_counter()
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(source.shape)
    for k, (dz, dy, dx) in enumerate(((0, 0, 1), (0, 1, 0), (1, 0, 0))):
        structure = np.zeros((3, 3, 3), dtype=int)
        structure[1 + dz, 1 + dy, 1 + dx] = 1
        g.add_grid_edges(ids, weights=edges[k].astype(np.int64), structure=structure, symmetric=True)
    g.add_grid_tedges(ids, source.astype(np.int64), sink.astype(np.int64))
    t = time.perf_counter()
    flow = g.maxflow()
    return int(flow), time.perf_counter() - t, t - t0


def bench_volume(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    on_gpu = args.device == "cuda"
    where = f"CPU, {torch.get_num_threads()} thread(s)" + (f", {torch.cuda.get_device_name()}" if on_gpu else "")
    print(f"{where}, {args.volume}^3 6-connected, best of {args.repeats}; ms")
    for seed in range(args.images):
        s, t, e = volume_graph(args.volume, seed)
        ref_flow, t_ref, t_build = pymaxflow_volume(s, t, e)
        st, tt, et = (torch.from_numpy(x) for x in (s, t, e))
        r, t_call = best(partial(torchgrabcut.mincut, st, tt, et), args.repeats)
        if int(r.flow) != ref_flow:
            raise AssertionError(f"volume {seed}: flow {int(r.flow)} differs from PyMaxflow's {ref_flow}")
        line = f"  volume {seed}: call {t_call * 1e3:8.1f}  pymaxflow {t_ref * 1e3:8.1f}  ({t_ref / t_call:4.2f}x)"
        if on_gpu:
            sg, tg, eg = (x.cuda() for x in (st, tt, et))
            g, t_gpu = best(partial(torchgrabcut.mincut, sg, tg, eg), args.repeats, torch.cuda.synchronize)
            if not (torch.equal(g.cut.cpu(), r.cut) and int(g.flow) == int(r.flow)):
                raise AssertionError(f"volume {seed}: the GPU's cut or flow differs from the CPU's")
            line += f"  cuda {t_gpu * 1e3:8.1f}  (pymaxflow / cuda {t_ref / t_gpu:5.1f}x)"
            # segment: the same energy built from the scene on the GPU, then solved.
            intensity, p, sigma = volume_scene(args.volume, seed)
            img = torch.from_numpy(intensity)[None, None].cuda()
            prob = torch.from_numpy(p)[None].cuda()
            seg = partial(torchgrabcut.segment, img, prob, lamda=5.0, sigma=sigma, connectivity=6)
            _, t_seg = best(seg, args.repeats, torch.cuda.synchronize)
            line += (
                f"  segment {t_seg * 1e3:8.1f} ({t_seg / t_gpu:4.2f}x the call;"
                f" pymaxflow build {t_build * 1e3:.0f} + solve / segment {(t_build + t_ref) / t_seg:6.1f}x)"
            )
        print(line)


def dump_graphs(items: list[Item], args: argparse.Namespace) -> None:
    """Each graph as a graph file for the torch-free models: NAME-4.tgcg, NAME-8.tgcg."""
    args.dump.mkdir(parents=True, exist_ok=True)
    for i, (name, image, box) in enumerate(items):
        for k in args.ks:
            source, sink, edges = segmentation_graph(image, box, args, k, seed=i)
            net, nlinks = solver_form(torch.from_numpy(source), torch.from_numpy(sink), torch.from_numpy(edges))
            path = args.dump / f"{Path(name).stem}-{2 * k}.tgcg"
            write_graph_file(path, net[0].numpy(), nlinks[0].numpy())
            print(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--connectivity", default="4,8")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--blur", type=float, default=8.0)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--noise-first", action="store_true", help="noise before the blur (default: after)")
    parser.add_argument("--lam", type=float, default=5.0)
    parser.add_argument("--sigma-fraction", type=float, default=0.25)
    parser.add_argument("--scale", type=float, default=100.0)
    parser.add_argument("--grabcut50", type=Path, default=DEFAULT_GRABCUT50)
    parser.add_argument("--volume", type=int, default=0, help="a 3D N^3 volume instead (--images of them)")
    parser.add_argument(
        "--dump", type=Path, help="write the 2D graphs to this folder as graph files (tests/common/graph_file.h), stop"
    )
    args = parser.parse_args()
    if args.volume:
        bench_volume(args)
        return
    if not (args.grabcut50 / "boxes.csv").is_file():
        sys.exit(f"GrabCut-50 not found at {args.grabcut50} (--grabcut50 DIR)")
    args.ks = [{4: 2, 8: 4}[int(c)] for c in args.connectivity.split(",")]
    items = load(args.grabcut50, args.images)
    print(
        f"graphs: blur {args.blur} px, noise {args.noise} {'before' if args.noise_first else 'after'} it, "
        f"lam {args.lam}, sigma {args.sigma_fraction} * std, scale {args.scale}"
    )
    if args.dump:
        dump_graphs(items, args)
    elif args.device == "cuda":
        bench_cuda(items, args)
    else:
        bench_cpu(items, args)


if __name__ == "__main__":
    main()
