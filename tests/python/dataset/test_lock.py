"""dataset/lock.py: one dataset job at a time on an output (issue 35, item 5).

A second job on the same -o, in-process, as another process, or under torchrun, stops at
once with one line (exit 2); a lock file left by a killed job does not block the next one.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dataset_fixtures
import pytest
from coco_fixtures import (
    dataset_args,
    one_line_error,
    run_module,
)
from dataset_hooks import hooked

from conftest import ctrl_c_as_in_a_terminal
from torchgrabcut.cli import main
from torchgrabcut.dataset.parts import parts_dir

# The shared fixtures (dataset_fixtures.py), bound here: pytest looks a fixture up by its name in the test's module.
full, small = dataset_fixtures.full, dataset_fixtures.small

# -- two jobs on one output ------------------------------------------------------------------------


def test_a_second_job_on_the_same_output_is_refused(small: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    out = tmp_path / "out.json"
    lock = tmp_path / "out.json.lock"
    argv = ["dataset", *dataset_args(small, small.parent / "images", out, "--device", "cpu", "--workers", "0")]
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running job holds it
        err = one_line_error(capsys, argv)
        assert "another dataset job" in err and str(out) in err, err
        assert not parts_dir(out).exists() and not out.exists()
    # A lock file left by a killed job holds no lock: the next job runs, and removes it.
    assert lock.exists()
    assert main(argv) == 0
    assert out.exists() and not lock.exists()


def test_two_processes_on_one_output(full: Path, tmp_path: Path) -> None:
    """While a job runs (held after its first chunk), a second one on its output exits at once."""
    out = tmp_path / "out.json"
    args = ["-m", "torchgrabcut", "dataset", *dataset_args(full, full.parent / "images", out)]
    args += ["--device", "cpu", "--batch-size", "1", "--workers", "0"]
    part = parts_dir(out) / "rank0.jsonl"
    proc = subprocess.Popen(
        [sys.executable, *hooked(args, block_after=1)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not (part.is_file() and part.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        second = run_module(args, tmp_path, timeout=120)
        assert second.returncode == 2, second.stderr
        assert "another dataset job" in second.stderr and len(second.stderr.strip().splitlines()) == 1
        assert len(part.read_bytes().splitlines()) == 1  # the second job did nothing
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert not (tmp_path / "out.json.lock").exists(), (err, os.listdir(tmp_path))


def test_a_second_job_under_torchrun_is_refused_on_every_rank(small: Path, tmp_path: Path) -> None:
    """Rank 0 takes the lock for its job and tells the others: no rank of a refused job starts.

    (torchrun stops the other rank as soon as one exits, often before it prints its line.)
    """
    out = tmp_path / "out.json"
    args = [*dataset_args(small, small.parent / "images", out), "--device", "cpu", "--workers", "0"]
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    with (tmp_path / "out.json.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        res = run_module([*launcher, "-m", "torchgrabcut", "dataset", *args], tmp_path, timeout=240)
    assert res.returncode != 0
    refusals = [line for line in res.stderr.splitlines() if "another dataset job" in line]
    assert 1 <= len(refusals) <= 2, res.stderr[-3000:]
    assert all(line.startswith("torchgrabcut dataset: error: --output: ") for line in refusals), refusals
    assert not parts_dir(out).exists() and not out.exists()
