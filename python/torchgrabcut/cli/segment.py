"""`torchgrabcut segment`: one image from a box or a trimap, the mask (and an overlay) written."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from torchgrabcut import api, imageio  # used as api.grabcut, imageio.read_image: looked up at each call
from torchgrabcut.cli.options import add_device, add_max_iter

__all__ = ["add_parser", "join_negative_box", "run", "segment_and_write"]

_BOX_COORDINATE_MAX = 2**31 - 1


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


def join_negative_box(argv: list[str]) -> list[str]:
    """``--box -5,10,120,110`` as ``--box=-5,10,120,110``.

    argparse takes a value that starts with '-' and is not a plain number for an option,
    and says "--box: expected one argument"; a box partly left of or above the image is
    then refused by the image's own check, which says what is wrong with it.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":  # everything after it is positional
            return out + argv[i:]
        if argv[i] == "--box" and i + 1 < len(argv) and argv[i + 1][:1] == "-" and argv[i + 1][1:2].isdigit():
            out.append(f"--box={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "segment",
        help="segment one image from a box or a trimap",
        description=f"Images: any format Pillow reads, up to {imageio.MAX_IMAGE_PIXELS:,} pixels "
        f"({imageio.MAX_IMAGE_PIXELS / 1e6:.0f} megapixels); grey, palette and RGBA images are read as colour (alpha "
        "dropped), 16-bit ones scaled to 8 bits, the EXIF orientation applied, as cv2.imread does.",
    )
    p.add_argument("image", help="image file (any format Pillow reads)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--box", type=_parse_box, help="x0,y0,x1,y1: half-open box around the object")
    where.add_argument(
        "--mask",
        help="8-bit image of OpenCV labels 0..3 (0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD), the image's size, in a "
        "lossless format (PNG, BMP, TIFF, PGM, ...; JPEG and lossy WebP are refused: they change the labels)",
    )
    p.add_argument(
        "-o",
        "--output",
        default="mask.png",
        help="where to write the mask (labels 0..3; default mask.png); a lossless format: "
        + ", ".join(imageio.LABEL_EXTENSIONS)
        + " (JPEG would change the labels)",
    )
    p.add_argument("--overlay", help="also write the image with the foreground outlined here (any format, JPEG too)")
    add_max_iter(p)
    add_device(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out_mask = imageio.check_output_path(args.output, "-o", labels=True)
    out_overlay = imageio.check_output_path(args.overlay, "--overlay") if args.overlay else None
    _check_outputs_apart({"IMAGE": args.image, "--mask": args.mask}, {"-o": out_mask, "--overlay": out_overlay})
    image = imageio.read_image(args.image)
    kwargs: dict[str, object] = {"max_iter": args.max_iter, "device": args.device}
    if args.box is not None:
        kwargs["box"] = args.box
    else:
        kwargs["mask"] = imageio.read_label_image(args.mask, "--mask")
    segment_and_write(image, out_mask, out_overlay, **kwargs)
    return 0


def segment_and_write(image: np.ndarray, out_mask: Path, out_overlay: Path | None, **kwargs: object) -> float:
    """GrabCut on ``image``, the mask (and the overlay) written, one line each; the call's seconds."""
    t = time.perf_counter()
    mask = api.grabcut(image, **kwargs)  # type: ignore[call-overload]
    seconds = time.perf_counter() - t
    imageio.write_image(out_mask, mask)
    print(f"mask: {out_mask} (labels 0..3; foreground = 1 or 3)")
    if out_overlay is not None:
        imageio.write_image(out_overlay, imageio.overlay(image, mask))
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
