"""`torchgrabcut demo`: the bundled image segmented from its box, the mask and an overlay written."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from torchgrabcut.cli.options import add_device
from torchgrabcut.cli.segment import segment_and_write
from torchgrabcut.data import BUNDLED_BOX, BUNDLED_IMAGE
from torchgrabcut.imageio import read_image

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="segment the bundled image and write the mask and an overlay")
    p.add_argument("-o", "--out-dir", default="out", help="folder for mask.png and overlay.png (default: out)")
    add_device(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"-o: {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    image = read_image(BUNDLED_IMAGE)
    print(f"image: {BUNDLED_IMAGE} (NASA, public domain), box {BUNDLED_BOX}")
    segment_and_write(image, out / "mask.png", out / "overlay.png", box=BUNDLED_BOX, device=args.device)
    return 0
