"""Ctrl-C while the command line starts: one line and exit status 130, not a traceback.

Both ``python -m torchgrabcut`` and the ``torchgrabcut`` script import the package first,
and the package imports torch: seconds before any of the command line's code runs, in
which a KeyboardInterrupt would end in a traceback from inside torch's import. So, when
this process is the command line, :func:`exit_on_ctrl_c` (run when this module is
imported, first thing in the package's ``__init__``) makes Ctrl-C end it at once
(nothing is written before the command runs) until :func:`ctrl_c_raises` hands it back
to Python's KeyboardInterrupt, which ``cli.main`` answers as every other interruption.
A library import (``import torchgrabcut`` from a program) is left alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

__all__ = ["ctrl_c_raises", "exit_on_ctrl_c"]


def _is_command_line() -> bool:
    """True in ``python [options] -m torchgrabcut ...`` and in the ``torchgrabcut`` script."""
    if sys.argv and Path(sys.argv[0]).stem == "torchgrabcut":  # the script (under -m: "-m" until found)
        return True
    argv = list(getattr(sys, "orig_argv", []))
    at = 1
    # The interpreter's own options come first; -X and -W take the next word as their value.
    while at < len(argv) and argv[at].startswith("-") and argv[at] != "-m":
        at += 2 if argv[at] in ("-X", "-W") else 1
    return argv[at : at + 2] == ["-m", "torchgrabcut"]


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"torchgrabcut: interrupted while starting\n")
    os._exit(130)


def exit_on_ctrl_c() -> None:
    """Ctrl-C exits at once with status 130, in the command line's process only."""
    # Only over Python's own handler: a process started with SIGINT ignored (nohup, a
    # background job of a non-interactive shell) keeps ignoring it.
    if threading.current_thread() is not threading.main_thread() or not _is_command_line():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _exit_now)


def ctrl_c_raises() -> None:
    """Ctrl-C raises KeyboardInterrupt again (where exit_on_ctrl_c had changed it)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _exit_now:
        signal.signal(signal.SIGINT, signal.default_int_handler)


exit_on_ctrl_c()  # on import: the package imports this module before torch
