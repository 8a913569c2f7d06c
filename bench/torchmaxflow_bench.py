"""torchgrabcut.segment against torchmaxflow.maxflow on the same inputs, side by side in one run (CPU).

    python bench/torchmaxflow_bench.py [--images 6] [--size 1024] [--volume 128] [--threads 1]

torchmaxflow (PyPI 0.0.7, BSD-3; a C++ extension built from its sdist against the installed
torch, CPU only) computes the same energy as ``segment``: unary -log(max(p, eps)), a Potts
term lamda * exp(-(|dI| / distance)^2 / (2 sigma^2)), solved with OpenCV's GCGraph in float.
Where the neighbourhoods agree the two graphs are the same: 4-connected images (its
8-connected graph has one diagonal only) and 6-connected volumes. The inputs: the
segmentation scenes of bench/mincut_bench.py (GrabCut-50 photos, a blurred noisy box as the
foreground probability, the grey level as the image) and its noisy ellipsoid volumes.
Both calls are timed whole (graph construction and solve), best of --repeats. The cuts
are compared pixel by pixel: ours is the canonical one (ties go to the source side) of the
integer graph after scaling, torchmaxflow's the BK source tree of the float graph, so
they may differ where a pixel's side is a tie or a rounding; the bench prints how many
pixels differ and the energy of each cut in float64 (ours must not be higher beyond
rounding). Install torchmaxflow first, e.g.
    pip download torchmaxflow==0.0.7 --no-deps --no-binary :all: && tar xzf torchmaxflow-0.0.7.tar.gz
    pip install --no-build-isolation --no-deps --target /tmp/tmf ./torchmaxflow-0.0.7
and run with PYTHONPATH=/tmp/tmf:python.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import torchgrabcut

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mincut_bench import DEFAULT_GRABCUT50, load, segmentation_scene, volume_scene

EPS = float(np.finfo(np.float32).eps)


def best(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    result, times = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return result, min(times)


def energy(image: np.ndarray, p_fg: np.ndarray, cut: np.ndarray, lamda: float, sigma: float) -> float:
    """The float64 energy of a labelling (True = foreground) of a (C, *grid) image, axis neighbours."""
    e = np.where(cut, -np.log(np.maximum(1 - p_fg, EPS)), -np.log(np.maximum(p_fg, EPS))).sum()
    for axis in range(cut.ndim):
        d = np.sqrt((np.diff(image, axis=axis + 1) ** 2).sum(0))
        w = lamda * np.exp(-(d * d) / (2 * sigma * sigma))
        e += (w * (np.diff(cut.astype(np.int8), axis=axis) != 0)).sum()
    return float(e)


def compare(
    name: str, image: np.ndarray, p_fg: np.ndarray, lamda: float, sigma: float, args: argparse.Namespace
) -> None:
    import torchmaxflow

    spatial = p_fg.ndim
    img = torch.from_numpy(image.astype(np.float32))  # (C, *grid)
    prob = torch.from_numpy(p_fg.astype(np.float32))
    both = torch.stack([1 - prob, prob])
    connectivity = 4 if spatial == 2 else 6
    # torchmaxflow takes a batch of one: (1, C, *grid) and (1, 2, *grid).
    theirs, t_theirs = best(
        lambda: torchmaxflow.maxflow(img[None], both[None], lamda, sigma, connectivity), args.repeats
    )
    ours, t_ours = best(
        lambda: torchgrabcut.segment(img, prob, lamda=lamda, sigma=sigma, connectivity=connectivity),
        args.repeats,
    )
    a = ours.cut.numpy()
    b = theirs.numpy().reshape(a.shape) > 0.5
    image64, p64 = image.astype(np.float32).astype(np.float64), p_fg.astype(np.float32).astype(np.float64)
    e_ours, e_theirs = energy(image64, p64, a, lamda, sigma), energy(image64, p64, b, lamda, sigma)
    print(
        f"  {name:14s} segment {t_ours * 1e3:8.1f} ms  torchmaxflow {t_theirs * 1e3:8.1f} ms  "
        f"({t_theirs / t_ours:5.2f}x)  pixels differing {int((a != b).sum())} of {a.size}  "
        f"energy ours {e_ours:.4f} theirs {e_theirs:.4f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--volume", type=int, default=128, help="side of the 3D volumes (0: none)")
    parser.add_argument("--volumes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lam", type=float, default=5.0)
    parser.add_argument("--blur", type=float, default=8.0)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--noise-first", action="store_true")
    parser.add_argument("--sigma-fraction", type=float, default=0.25)
    parser.add_argument("--grabcut50", type=Path, default=DEFAULT_GRABCUT50)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    print(f"CPU, {threads} thread(s) for segment; torchmaxflow is single-threaded; best of {args.repeats}")
    print(f"images {args.size}x{args.size}, 4-connected, lamda {args.lam}:")
    for i, (name, image, box) in enumerate(load(args.grabcut50, args.images)):
        grey, p, sigma = segmentation_scene(image, box, args, seed=i)
        compare(name, grey[None], p, args.lam, sigma, args)
    if args.volume:
        print(f"volumes {args.volume}^3, 6-connected, lamda 5:")
        for seed in range(args.volumes):
            intensity, p, sigma = volume_scene(args.volume, seed)
            compare(f"ellipsoid {seed}", intensity[None], p, 5.0, sigma, args)


if __name__ == "__main__":
    main()
