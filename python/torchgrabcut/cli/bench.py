"""`torchgrabcut bench`: speed against cv2.grabCut; the work is in :mod:`torchgrabcut.tools.speed`."""

from __future__ import annotations

import argparse
from typing import Any

from torchgrabcut.cli.options import add_max_iter, float_list, int_range
from torchgrabcut.data import BUNDLED_IMAGE
from torchgrabcut.imageio import MAX_IMAGE_PIXELS, check_output_path
from torchgrabcut.tools.figures import require_matplotlib, speed_plot
from torchgrabcut.tools.speed import MIN_BENCH_MEGAPIXELS, bench_sizes, format_bench

__all__ = ["add_parser", "run"]

MAX_REPEATS = 1000  # --repeats: a larger count is a typo, not a measurement
PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="speed against cv2.grabCut, on the CPU and the GPU")
    p.add_argument("--image", default=None, help="image to scale (default: the bundled one)")
    max_mp = MAX_IMAGE_PIXELS / 1e6
    p.add_argument(
        "--sizes",
        type=float_list(MIN_BENCH_MEGAPIXELS, max_mp, "megapixels"),
        default=(0.3, 1.0, 4.0),
        help=f"megapixels, comma-separated, each {MIN_BENCH_MEGAPIXELS:g}..{max_mp:g} (default 0.3,1,4)",
    )
    p.add_argument(
        "--repeats",
        type=int_range(1, MAX_REPEATS),
        default=3,
        help=f"timed runs per size, 1..{MAX_REPEATS}; the median is shown (default 3)",
    )
    add_max_iter(p)
    p.add_argument("--no-cv2", action="store_true", help="skip cv2.grabCut")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU")
    p.add_argument(
        "--plot",
        help="also write a plot of time against megapixels (log scale) here: "
        + ", ".join("." + f for f in PLOT_FORMATS)
        + " (needs matplotlib)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    plot = None
    if args.plot:
        plot = check_output_path(args.plot, "--plot", extensions=PLOT_FORMATS)
        require_matplotlib()
    rows = bench_sizes(
        args.image or BUNDLED_IMAGE,
        args.sizes,
        max_iter=args.max_iter,
        repeats=args.repeats,
        with_cv2=not args.no_cv2,
        with_gpu=not args.no_gpu,
    )
    print(format_bench(rows))
    if plot is not None:
        speed_plot(rows, plot)
        print(f"speed plot: {plot}")
    return 0
