"""The command line with the dataset job stopped or held once a chunk is durable, for the tests.

Tests interrupt a run at a known, durable point however fast or busy the machine is by
running it through this script instead of ``python -m torchgrabcut``::

    python dataset_hooks.py --exit-after K dataset ...   # os._exit(3) once K chunks are written
    python dataset_hooks.py --block-after K dataset ...  # the post-processing thread then waits forever

The exit leaves the files as a kill would (no cleanup): the resume tests. The hold keeps
the run going until it is interrupted: the Ctrl-C and lock tests. The package has no such
switch; the hook wraps the post-processing thread's chunk write from outside.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from torchgrabcut.cli import main as cli_main
from torchgrabcut.dataset.pipeline import PostProcessor
from torchgrabcut.dataset.plan import ImagePlan

__all__ = ["hooked", "install"]

SCRIPT = Path(__file__).resolve()
EXIT_STATUS = 3


def hooked(args: list[str], *, exit_after: int = 0, block_after: int = 0) -> list[str]:
    """The arguments of ``python -m torchgrabcut dataset ...`` that run the same command through this script."""
    assert args[:3] == ["-m", "torchgrabcut", "dataset"], args
    return [str(SCRIPT), f"--exit-after={exit_after}", f"--block-after={block_after}", *args[2:]]


def install(exit_after: int = 0, block_after: int = 0) -> None:
    """After the chunk write that makes ``exit_after`` (``block_after``) chunks durable, exit (hold); 0: never."""
    write_chunk = PostProcessor._write_chunk
    written = 0

    def write_chunk_then_stop(self: PostProcessor, plans: list[ImagePlan]) -> None:
        nonlocal written
        write_chunk(self, plans)  # the part line, the share and on_chunk: the chunk is durable
        written += 1
        if exit_after and written >= exit_after:
            os._exit(EXIT_STATUS)
        if block_after and written >= block_after:
            threading.Event().wait()

    PostProcessor._write_chunk = write_chunk_then_stop  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # the rest is the command line's
    parser.add_argument("--exit-after", type=int, default=0)
    parser.add_argument("--block-after", type=int, default=0)
    hooks, rest = parser.parse_known_args(argv)
    install(hooks.exit_after, hooks.block_after)
    return cli_main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
