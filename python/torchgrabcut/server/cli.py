"""`torchgrabcut serve`: argument parsing; the app is in this package's other modules."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="interactive web page on 127.0.0.1 (not built yet)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    raise RuntimeError("the web page is not built yet")
