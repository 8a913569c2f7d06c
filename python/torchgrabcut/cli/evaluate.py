"""`torchgrabcut eval`: quality on a dataset folder; the work is in :mod:`torchgrabcut.tools.evaluate`."""

from __future__ import annotations

import argparse
from typing import Any

from torchgrabcut.cli.options import add_device, add_max_iter, int_range
from torchgrabcut.imageio import check_output_path, write_image
from torchgrabcut.tools.evaluate import evaluate_dataset, format_eval
from torchgrabcut.tools.figures import contact_sheet, sheet_tiles

__all__ = ["add_parser", "run"]

MAX_SHEET_COLUMNS = 1000
CV2_SEED_MAX = 2**31 - 1  # cv2.setRNGSeed takes a C int


def add_parser(sub: Any) -> None:
    p = sub.add_parser("eval", help="quality on a dataset folder (images/, gt/, boxes.csv)")
    p.add_argument("dataset", help="folder with images/, gt/<stem>.png and boxes.csv (inclusive x0,y0,x1,y1)")
    add_device(p)
    add_max_iter(p)
    p.add_argument("--no-cv2", action="store_true", help="do not run cv2.grabCut beside it")
    p.add_argument(
        "--cv2-seed",
        type=int_range(0, CV2_SEED_MAX),
        default=None,
        help="reset OpenCV's random generator to this (0..2^31-1) before each image, so that cv2's mask for an "
        "image does not depend on the images before it (default: not reset, which reproduces the numbers "
        "quoted for GrabCut-50 when the dataset is run in order)",
    )
    p.add_argument(
        "--sheet",
        help="also write a contact sheet here (an image; PNG or JPEG...): every image, our foreground bright and "
        "outlined in green, the ground truth outlined in magenta, IoU in the caption",
    )
    p.add_argument(
        "--sheet-columns",
        type=int_range(1, MAX_SHEET_COLUMNS),
        default=6,
        help=f"images per row of the contact sheet, 1..{MAX_SHEET_COLUMNS} (default 6)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    sheet = check_output_path(args.sheet, "--sheet") if args.sheet else None
    res = evaluate_dataset(
        args.dataset, device=args.device, max_iter=args.max_iter, with_cv2=not args.no_cv2, cv2_seed=args.cv2_seed
    )
    print(format_eval(res))
    if sheet is not None:
        write_image(sheet, contact_sheet(sheet_tiles(res), columns=args.sheet_columns))
        print(f"contact sheet: {sheet}")
    return 0
