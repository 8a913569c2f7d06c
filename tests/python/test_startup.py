"""Which processes are the command line, whose Ctrl-C while starting is one line (test_cli.py runs it)."""

from __future__ import annotations

import sys

import pytest

from torchgrabcut import _startup

CASES = [
    (["python", "-m", "torchgrabcut", "demo"], "-m", True),
    (["python", "-X", "importtime", "-u", "-m", "torchgrabcut"], "-m", True),
    (["python", "/venv/bin/torchgrabcut", "segment", "a.png", "-m", "x"], "/venv/bin/torchgrabcut", True),
    (["python", "-m", "pytest", "-m", "torchgrabcut"], "-m", False),
    (["python", "-m", "torchgrabcut.tools.speed"], "-m", False),
    (["python", "-c", "import torchgrabcut"], "-c", False),
    (["python", "script.py", "-m", "torchgrabcut"], "script.py", False),
]


@pytest.mark.parametrize(("orig_argv", "argv0", "expected"), CASES, ids=[" ".join(c[0][1:]) for c in CASES])
def test_only_the_command_line_is_recognised(
    monkeypatch: pytest.MonkeyPatch, orig_argv: list[str], argv0: str, expected: bool
) -> None:
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    monkeypatch.setattr(sys, "argv", [argv0])
    assert _startup._is_command_line() is expected


def test_a_library_import_leaves_ctrl_c_to_python() -> None:
    import signal

    assert signal.getsignal(signal.SIGINT) is not _startup._exit_now
