"""The torchgrabcut command line: demo, segment, eval, bench, dataset, serve.

Errors (a missing file, an unreadable image, a bad box) print one line on
stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]

DEMO_BOX = (15, 10, 370, 512)  # the astronaut in data/astronaut.png, half-open


def _parse_box(text: str) -> tuple[int, int, int, int]:
    parts = text.split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"expected x0,y0,x1,y1 (four integers), got {text!r}")
    return values  # type: ignore[return-value]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchgrabcut",
        description="GrabCut segmentation with an exact min-cut, on the CPU or a CUDA GPU.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="segment the bundled image and write the mask and an overlay")
    demo.add_argument("-o", "--out-dir", default="out", help="folder for mask.png and overlay.png (default: out)")
    demo.add_argument("--device", default=None, help="cpu or cuda (default: cuda when usable)")

    seg = sub.add_parser("segment", help="segment one image from a box or a trimap")
    seg.add_argument("image", help="image file (any format Pillow reads)")
    where = seg.add_mutually_exclusive_group(required=True)
    where.add_argument("--box", type=_parse_box, help="x0,y0,x1,y1: half-open box around the object")
    where.add_argument("--mask", help="PNG of OpenCV labels 0..3 (0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD)")
    seg.add_argument(
        "-o", "--output", default="mask.png", help="where to write the mask (labels 0..3; default mask.png)"
    )
    seg.add_argument("--overlay", help="also write the image with the foreground outlined here")
    seg.add_argument("--max-iter", type=int, default=5, help="GrabCut iterations (default 5)")
    seg.add_argument("--device", default=None, help="cpu or cuda (default: cuda when usable)")

    ev = sub.add_parser("eval", help="quality on a dataset folder (images/, gt/, boxes.csv)")
    ev.add_argument("dataset", help="folder with images/, gt/<stem>.png and boxes.csv (inclusive x0,y0,x1,y1)")
    ev.add_argument("--device", default=None, help="cpu or cuda (default: cuda when usable)")
    ev.add_argument("--max-iter", type=int, default=5, help="GrabCut iterations (default 5)")
    ev.add_argument("--no-cv2", action="store_true", help="do not run cv2.grabCut beside it")
    ev.add_argument(
        "--cv2-seed",
        type=int,
        default=None,
        help="reset OpenCV's random generator to this before each image, so that cv2's mask for an image does "
        "not depend on the images before it (default: not reset, which reproduces the numbers quoted for "
        "GrabCut-50 when the dataset is run in order)",
    )
    ev.add_argument(
        "--sheet",
        help="also write a contact sheet here (PNG): every image, our foreground bright and outlined in green, "
        "the ground truth outlined in magenta, IoU in the caption",
    )
    ev.add_argument("--sheet-columns", type=int, default=6, help="images per row of the contact sheet (default 6)")

    be = sub.add_parser("bench", help="speed against cv2.grabCut, on the CPU and the GPU")
    be.add_argument("--image", default=None, help="image to scale (default: the bundled one)")
    be.add_argument("--sizes", default="0.3,1,4", help="megapixels, comma-separated (default 0.3,1,4)")
    be.add_argument("--repeats", type=int, default=3, help="timed runs per size; the median is shown")
    be.add_argument("--max-iter", type=int, default=5, help="GrabCut iterations (default 5)")
    be.add_argument("--no-cv2", action="store_true", help="skip cv2.grabCut")
    be.add_argument("--no-gpu", action="store_true", help="skip the GPU")
    be.add_argument("--plot", help="also write a plot of time against megapixels (log scale) here (PNG)")

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


def _run(args: argparse.Namespace) -> int:
    from torchgrabcut.imageio import read_image

    handler = getattr(args, "handler", None)
    if handler is not None:
        return int(handler(args))
    if args.command == "demo":
        from torchgrabcut.bench import DEFAULT_IMAGE

        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        image = read_image(DEFAULT_IMAGE)
        print(f"image: {DEFAULT_IMAGE} (NASA, public domain), box {DEMO_BOX}")
        _segment(image, out / "mask.png", out / "overlay.png", box=DEMO_BOX, device=args.device)
        return 0
    if args.command == "segment":
        image = read_image(args.image)
        kwargs: dict[str, object] = {"max_iter": args.max_iter, "device": args.device}
        if args.box is not None:
            kwargs["box"] = args.box
        else:
            kwargs["mask"] = read_image(args.mask, grayscale=True)
        _segment(image, Path(args.output), Path(args.overlay) if args.overlay else None, **kwargs)
        return 0
    if args.command == "eval":
        from torchgrabcut.evaluate import evaluate_dataset, format_eval

        res = evaluate_dataset(
            args.dataset, device=args.device, max_iter=args.max_iter, with_cv2=not args.no_cv2, cv2_seed=args.cv2_seed
        )
        print(format_eval(res))
        if args.sheet:
            from torchgrabcut.evaluate import sheet_tiles
            from torchgrabcut.figures import contact_sheet
            from torchgrabcut.imageio import write_image

            write_image(args.sheet, contact_sheet(sheet_tiles(res), columns=args.sheet_columns))
            print(f"contact sheet: {args.sheet}")
        return 0
    if args.command == "bench":
        from torchgrabcut.bench import DEFAULT_IMAGE, bench_sizes, format_bench

        try:
            sizes = tuple(float(s) for s in args.sizes.split(","))
        except ValueError as err:
            raise ValueError(f"--sizes: expected comma-separated megapixels, got {args.sizes!r}") from err
        rows = bench_sizes(
            args.image or DEFAULT_IMAGE,
            sizes,
            max_iter=args.max_iter,
            repeats=args.repeats,
            with_cv2=not args.no_cv2,
            with_gpu=not args.no_gpu,
        )
        print(format_bench(rows))
        if args.plot:
            from torchgrabcut.figures import speed_plot

            speed_plot(rows, args.plot)
            print(f"speed plot: {args.plot}")
        return 0
    raise AssertionError(args.command)


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, TypeError, FileNotFoundError, OSError, RuntimeError) as err:
        print(f"torchgrabcut {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is how a long dataset job is paused: what was written is kept.
        again = "; the same command continues where it stopped" if args.command == "dataset" else ""
        print(f"torchgrabcut {args.command}: interrupted{again}", file=sys.stderr)
        return 130
