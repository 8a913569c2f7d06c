"""The torchgrabcut command line: demo, segment, eval, bench, dataset, serve.

Every subcommand is a module with ``add_parser(subparsers)``, which adds its parser and sets
``handler`` (args -> exit status) through ``set_defaults``, and that ``run`` function;
:data:`SUBCOMMANDS` lists them once, in the order ``--help`` shows them.

Errors (a missing file, an unreadable image, a bad box, an option's bad value)
print one line on stderr and exit with status 2; no traceback. Option values and
output paths are checked before any work is done.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from torchgrabcut import _startup
from torchgrabcut.cli import bench, demo, evaluate, segment
from torchgrabcut.dataset import cli as dataset
from torchgrabcut.server import cli as serve

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS = (demo, segment, evaluate, bench, dataset, serve)


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error of the command line (argparse prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchgrabcut",
        description="GrabCut segmentation with an exact min-cut, on the CPU or a CUDA GPU.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line on ``argv`` (default: the process's arguments); its exit status.

    With no arguments at all it runs the demo (`python -m torchgrabcut`), saying so first.
    """
    _startup.ctrl_c_raises()  # from here Ctrl-C is a KeyboardInterrupt, answered below
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print("torchgrabcut: no command given: running the demo (torchgrabcut --help lists the commands)")
        argv = ["demo"]
    if argv[0] == "segment":
        argv = segment.join_negative_box(argv)
    try:
        # Parsing checks --device, which starts CUDA: seconds in which Ctrl-C may come.
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("torchgrabcut: interrupted", file=sys.stderr)
        return 130
    try:
        return int(args.handler(args))
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
