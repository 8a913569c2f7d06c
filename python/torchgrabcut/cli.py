"""The torchgrabcut command line: demo, segment, eval, bench, dataset, serve.

Errors (a missing file, an unreadable image, a bad box, an option's bad value)
print one line on stderr and exit with status 2; no traceback. Option values and
output paths are checked before any work is done.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

__all__ = ["float_list", "int_range", "main"]

DEMO_BOX = (15, 10, 370, 512)  # the astronaut in data/astronaut.png, half-open
MAX_REPEATS = 1000  # bench --repeats: a larger count is a typo, not a measurement
MAX_SHEET_COLUMNS = 1000
CV2_SEED_MAX = 2**31 - 1  # cv2.setRNGSeed takes a C int
_BOX_COORDINATE_MAX = 2**31 - 1
PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error of the command line (argparse prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ``low..high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number {low}..{high}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number {low}..{high}, got {text}")
        return value

    return parse


def float_list(low: float, high: float, unit: str) -> Callable[[str], tuple[float, ...]]:
    """An argparse type: comma-separated finite numbers, each in ``low..high``."""

    def parse(text: str) -> tuple[float, ...]:
        values = []
        for part in text.split(","):
            try:
                v = float(part)
            except ValueError:
                v = math.nan
            if not (math.isfinite(v) and low <= v <= high):
                raise argparse.ArgumentTypeError(
                    f"expected comma-separated {unit}, each from {low:g} to {high:g}, got {text!r}"
                )
            values.append(v)
        return tuple(values)

    return parse


def _parse_box(text: str) -> tuple[int, int, int, int]:
    parts = text.split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    # Bounded so that no coordinate overflows on its way to the C++ operator; whether the box
    # fits the image is checked once the image is read.
    if len(values) != 4 or any(abs(v) > _BOX_COORDINATE_MAX for v in values):
        raise argparse.ArgumentTypeError(f"expected x0,y0,x1,y1 (four whole numbers, pixels), got {text!r}")
    return values  # type: ignore[return-value]


def _device(text: str) -> str:
    """cpu, cuda or cuda:N, usable here; checked before any image is read."""
    import torch

    from torchgrabcut.api import resolve_device

    try:
        dev = resolve_device(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("device: ")) from None
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f"device: {text!r}, but this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    return text


def _build_parser() -> argparse.ArgumentParser:
    from torchgrabcut.api import MAX_ITER_LIMIT
    from torchgrabcut.bench import MIN_BENCH_MEGAPIXELS
    from torchgrabcut.imageio import LABEL_EXTENSIONS, MAX_IMAGE_PIXELS

    max_iter = int_range(0, MAX_ITER_LIMIT)
    device_help = "cpu, cuda or cuda:N (default: cuda when usable)"
    iter_help = f"GrabCut iterations, 0..{MAX_ITER_LIMIT} (default 5)"
    parser = _Parser(
        prog="torchgrabcut",
        description="GrabCut segmentation with an exact min-cut, on the CPU or a CUDA GPU.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="segment the bundled image and write the mask and an overlay")
    demo.add_argument("-o", "--out-dir", default="out", help="folder for mask.png and overlay.png (default: out)")
    demo.add_argument("--device", type=_device, default=None, help=device_help)

    seg = sub.add_parser(
        "segment",
        help="segment one image from a box or a trimap",
        description=f"Images: any format Pillow reads, up to {MAX_IMAGE_PIXELS:,} pixels "
        f"({MAX_IMAGE_PIXELS / 1e6:.0f} megapixels); grey, palette and RGBA images are read as colour (alpha "
        "dropped), 16-bit ones scaled to 8 bits, the EXIF orientation applied, as cv2.imread does.",
    )
    seg.add_argument("image", help="image file (any format Pillow reads)")
    where = seg.add_mutually_exclusive_group(required=True)
    where.add_argument("--box", type=_parse_box, help="x0,y0,x1,y1: half-open box around the object")
    where.add_argument(
        "--mask", help="8-bit image of OpenCV labels 0..3 (0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD), the image's size"
    )
    seg.add_argument(
        "-o",
        "--output",
        default="mask.png",
        help="where to write the mask (labels 0..3; default mask.png); a lossless format: "
        + ", ".join(LABEL_EXTENSIONS)
        + " (JPEG would change the labels)",
    )
    seg.add_argument("--overlay", help="also write the image with the foreground outlined here (any format, JPEG too)")
    seg.add_argument("--max-iter", type=max_iter, default=5, help=iter_help)
    seg.add_argument("--device", type=_device, default=None, help=device_help)

    ev = sub.add_parser("eval", help="quality on a dataset folder (images/, gt/, boxes.csv)")
    ev.add_argument("dataset", help="folder with images/, gt/<stem>.png and boxes.csv (inclusive x0,y0,x1,y1)")
    ev.add_argument("--device", type=_device, default=None, help=device_help)
    ev.add_argument("--max-iter", type=max_iter, default=5, help=iter_help)
    ev.add_argument("--no-cv2", action="store_true", help="do not run cv2.grabCut beside it")
    ev.add_argument(
        "--cv2-seed",
        type=int_range(0, CV2_SEED_MAX),
        default=None,
        help="reset OpenCV's random generator to this (0..2^31-1) before each image, so that cv2's mask for an "
        "image does not depend on the images before it (default: not reset, which reproduces the numbers "
        "quoted for GrabCut-50 when the dataset is run in order)",
    )
    ev.add_argument(
        "--sheet",
        help="also write a contact sheet here (an image; PNG or JPEG...): every image, our foreground bright and "
        "outlined in green, the ground truth outlined in magenta, IoU in the caption",
    )
    ev.add_argument(
        "--sheet-columns",
        type=int_range(1, MAX_SHEET_COLUMNS),
        default=6,
        help=f"images per row of the contact sheet, 1..{MAX_SHEET_COLUMNS} (default 6)",
    )

    be = sub.add_parser("bench", help="speed against cv2.grabCut, on the CPU and the GPU")
    be.add_argument("--image", default=None, help="image to scale (default: the bundled one)")
    max_mp = MAX_IMAGE_PIXELS / 1e6
    be.add_argument(
        "--sizes",
        type=float_list(MIN_BENCH_MEGAPIXELS, max_mp, "megapixels"),
        default=(0.3, 1.0, 4.0),
        help=f"megapixels, comma-separated, each {MIN_BENCH_MEGAPIXELS:g}..{max_mp:g} (default 0.3,1,4)",
    )
    be.add_argument(
        "--repeats",
        type=int_range(1, MAX_REPEATS),
        default=3,
        help=f"timed runs per size, 1..{MAX_REPEATS}; the median is shown (default 3)",
    )
    be.add_argument("--max-iter", type=max_iter, default=5, help=iter_help)
    be.add_argument("--no-cv2", action="store_true", help="skip cv2.grabCut")
    be.add_argument("--no-gpu", action="store_true", help="skip the GPU")
    be.add_argument(
        "--plot",
        help="also write a plot of time against megapixels (log scale) here: "
        + ", ".join("." + f for f in PLOT_FORMATS)
        + " (needs matplotlib)",
    )

    # Subcommands that live in their own packages register themselves; each sets
    # `handler` (args -> exit status) through set_defaults.
    from torchgrabcut.coco import cli as coco_cli
    from torchgrabcut.server import cli as server_cli

    coco_cli.add_parser(sub)
    server_cli.add_parser(sub)
    return parser


def _segment(image: np.ndarray, out_mask: Path, out_overlay: Path | None, **kwargs: object) -> float:
    from torchgrabcut.api import grabcut
    from torchgrabcut.imageio import overlay, write_image

    t = time.perf_counter()
    mask = grabcut(image, **kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t
    write_image(out_mask, mask)
    print(f"mask: {out_mask} (labels 0..3; foreground = 1 or 3)")
    if out_overlay is not None:
        write_image(out_overlay, overlay(image, mask))
        print(f"overlay: {out_overlay}")
    fg = float((mask & 1).mean())
    print(f"{image.shape[0]}x{image.shape[1]}: {100 * fg:.1f}% foreground, {1e3 * seconds:.1f} ms")
    return seconds


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist yet
        return a.resolve() == b.resolve()


def _check_outputs_apart(inputs: dict[str, str | None], outputs: dict[str, Path | None]) -> None:
    """No output may overwrite an input or another output (the mask written over the photo)."""
    named = [(k, Path(v)) for k, v in inputs.items() if v] + [(k, v) for k, v in outputs.items() if v is not None]
    for i, (out_name, out_path) in enumerate(named):
        if out_name not in outputs:
            continue
        for other_name, other_path in named[:i]:
            if _same_file(out_path, other_path):
                raise ValueError(f"{out_name} {out_path} is the same file as {other_name}; choose another name")


def _run(args: argparse.Namespace) -> int:
    from torchgrabcut.imageio import check_output_path, read_image

    handler = getattr(args, "handler", None)
    if handler is not None:
        return int(handler(args))
    if args.command == "demo":
        from torchgrabcut.bench import DEFAULT_IMAGE

        out = Path(args.out_dir)
        if out.exists() and not out.is_dir():
            raise ValueError(f"-o: {out} exists and is not a folder")
        out.mkdir(parents=True, exist_ok=True)
        image = read_image(DEFAULT_IMAGE)
        print(f"image: {DEFAULT_IMAGE} (NASA, public domain), box {DEMO_BOX}")
        _segment(image, out / "mask.png", out / "overlay.png", box=DEMO_BOX, device=args.device)
        return 0
    if args.command == "segment":
        out_mask = check_output_path(args.output, "-o", labels=True)
        out_overlay = check_output_path(args.overlay, "--overlay") if args.overlay else None
        _check_outputs_apart({"IMAGE": args.image, "--mask": args.mask}, {"-o": out_mask, "--overlay": out_overlay})
        image = read_image(args.image)
        kwargs: dict[str, object] = {"max_iter": args.max_iter, "device": args.device}
        if args.box is not None:
            kwargs["box"] = args.box
        else:
            kwargs["mask"] = read_image(args.mask, grayscale=True)
        _segment(image, out_mask, out_overlay, **kwargs)
        return 0
    if args.command == "eval":
        from torchgrabcut.evaluate import evaluate_dataset, format_eval

        sheet = check_output_path(args.sheet, "--sheet") if args.sheet else None
        res = evaluate_dataset(
            args.dataset, device=args.device, max_iter=args.max_iter, with_cv2=not args.no_cv2, cv2_seed=args.cv2_seed
        )
        print(format_eval(res))
        if sheet is not None:
            from torchgrabcut.evaluate import sheet_tiles
            from torchgrabcut.figures import contact_sheet
            from torchgrabcut.imageio import write_image

            write_image(sheet, contact_sheet(sheet_tiles(res), columns=args.sheet_columns))
            print(f"contact sheet: {sheet}")
        return 0
    if args.command == "bench":
        from torchgrabcut.bench import DEFAULT_IMAGE, bench_sizes, format_bench

        plot = None
        if args.plot:
            from torchgrabcut.figures import require_matplotlib

            plot = check_output_path(args.plot, "--plot", extensions=PLOT_FORMATS)
            require_matplotlib()
        rows = bench_sizes(
            args.image or DEFAULT_IMAGE,
            args.sizes,
            max_iter=args.max_iter,
            repeats=args.repeats,
            with_cv2=not args.no_cv2,
            with_gpu=not args.no_gpu,
        )
        print(format_bench(rows))
        if plot is not None:
            from torchgrabcut.figures import speed_plot

            speed_plot(rows, plot)
            print(f"speed plot: {plot}")
        return 0
    raise AssertionError(args.command)


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, TypeError, OSError, RuntimeError, OverflowError) as err:
        print(f"torchgrabcut {args.command}: error: {err}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"torchgrabcut {args.command}: error: out of memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is how a long dataset job is paused: what was written is kept.
        again = "; the same command continues where it stopped" if args.command == "dataset" else ""
        print(f"torchgrabcut {args.command}: interrupted{again}", file=sys.stderr)
        return 130
