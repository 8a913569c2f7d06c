"""`torchgrabcut dataset`: argument parsing; the work is in this package's other modules."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dataset", help="GrabCut on every box of a COCO annotation file (not built yet)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    raise RuntimeError("the dataset job is not built yet")
