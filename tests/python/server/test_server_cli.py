"""server/cli.py: `torchgrabcut serve` from the command line: starts and answers, refuses bad limits."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from torchgrabcut.imageio import write_image
from torchgrabcut.server.access import TOKEN_HEADER

# --- the command line ----------------------------------------------------------------------


def test_cli_serve_starts_and_answers(image: np.ndarray, tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", image)
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchgrabcut", "serve", "a.png", "--port", "0", "--device", "cpu"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, line
        base = m.group(0)
        with urllib.request.urlopen(base, timeout=30) as resp:
            assert b"torchgrabcut" in resp.read()
        with urllib.request.urlopen(base + "api/images", timeout=30) as resp:
            assert b"a.png" in resp.read()
        # Through a real socket: another Host, and a post without the token, are refused.
        port = int(m.group(1))
        evil = urllib.request.Request(base + "api/images", headers={"Host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(evil, timeout=30)
        assert err.value.code == 403
        opened = {"Content-Type": "application/json"}
        post = urllib.request.Request(base + "api/open", data=b'{"index": 0}', headers=opened)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(post, timeout=30)
        assert err.value.code == 403
        with urllib.request.urlopen(base, timeout=30) as resp:
            token = re.search(rb'name="torchgrabcut-token" content="([^"]+)"', resp.read())
        assert token
        post.add_header(TOKEN_HEADER, token.group(1).decode())
        with urllib.request.urlopen(post, timeout=30) as resp:
            assert resp.status == 200 and b'"name":"a.png"' in resp.read()
    finally:
        proc.terminate()
        proc.wait(30)


def test_cli_serve_errors(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "torchgrabcut", "serve", "missing.png", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "missing.png" in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-megapixels", "inf"], "--max-megapixels: expected a number > 0 and <= 178.957, got inf"),
        (["--max-megapixels", "nan"], "--max-megapixels: expected a number > 0 and <= 178.957, got nan"),
        (["--max-megapixels", "0"], "--max-megapixels: expected a number > 0 and <= 178.957, got 0"),
        (["--max-megapixels", "-5"], "--max-megapixels"),
        (["--max-megapixels", "1e303"], "--max-megapixels"),
        # Past what the library reads at all (torchgrabcut.imageio.MAX_IMAGE_PIXELS): a limit that could never apply.
        (["--max-megapixels", "179"], "--max-megapixels: expected a number > 0 and <= 178.957, got 179"),
        (["--max-upload-mb", "inf"], "--max-upload-mb"),
        (["--queue-timeout", "1e300"], "--queue-timeout"),
        (["--session-timeout", "0"], "--session-timeout"),
        (["--queue-timeout", "-1"], "--queue-timeout: expected a number >= 0"),
        (["--max-concurrent", "0"], "--max-concurrent: expected >= 1"),
        (["--max-sessions", "0"], "--max-sessions: expected >= 1"),
        (["--allow-host", "evil.example:80"], "allowed host"),
        # Every option at start, never a server that then answers every request 400 (issue 35, item 9).
        (["--box-iter", "2000000"], "argument --box-iter: expected a whole number 1..1000000, got 2000000"),
        (["--box-iter", "0"], "argument --box-iter"),
        (["--refine-iter", "2000000"], "argument --refine-iter"),
        (["--refine-iter", "-1"], "argument --refine-iter"),
        (["--device", "tpu"], "argument --device"),
        (["--max-memory-mb", "nan"], "--max-memory-mb: expected a number > 0"),
        (["--max-memory-mb", "100"], "--max-memory-mb: 100 MiB cannot hold one session with a 40-megapixel image"),
        (["--host", "999.1.1.1"], "--host 999.1.1.1: not an address or name this machine can listen on"),
        (["--host", "no such host.invalid"], "--host no such host.invalid"),
    ],
)
def test_cli_serve_refuses_bad_limits(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from torchgrabcut.cli import main

    try:
        status = main(["serve", "--port", "0", "--device", "cpu", *args])
    except SystemExit as stop:  # argparse's refusal of an option's type
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_cli_serve_refuses_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from torchgrabcut.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"torchgrabcut serve: error: --port {port}: already in use on 127.0.0.1 by another program "
        "(pick another, or --port 0 for a free one)\n"
    ), err
