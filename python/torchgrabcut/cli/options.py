"""Argument types and checks shared by the subcommands: each bad value is one argparse error."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import torch

from torchgrabcut.api import MAX_ITER_LIMIT
from torchgrabcut.device import resolve_device

__all__ = ["add_device", "add_max_iter", "device", "float_list", "int_range"]


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


def add_max_iter(parser: argparse.ArgumentParser) -> None:
    """--max-iter: 0..the library's limit, default 5."""
    parser.add_argument(
        "--max-iter",
        type=int_range(0, MAX_ITER_LIMIT),
        default=5,
        help=f"GrabCut iterations, 0..{MAX_ITER_LIMIT} (default 5)",
    )


def add_device(parser: argparse.ArgumentParser) -> None:
    """--device: checked usable before any image is read."""
    parser.add_argument("--device", type=device, default=None, help="cpu, cuda or cuda:N (default: cuda when usable)")


def device(text: str) -> str:
    """cpu, cuda or cuda:N, usable here; checked before any image is read."""
    try:
        dev = resolve_device(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("device: ")) from None
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f"device: {text!r}, but this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    return text
