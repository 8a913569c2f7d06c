"""What `pip install .` puts in place: every subpackage and the files the package reads at run time.

The wheel is built without the extension (TORCHGRABCUT_SKIP_EXT=1, seconds instead of
minutes): the compiled part is tested everywhere else; this checks the packaging, which
an editable install (what the other tests run) would not notice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "python" / "torchgrabcut"


def test_the_wheel_holds_every_module_and_data_file(tmp_path: Path) -> None:
    env = dict(os.environ, TORCHGRABCUT_SKIP_EXT="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("torchgrabcut-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # every Python file and run-time data file of the source tree
    expected = {
        "torchgrabcut/" + p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.suffix in {".py", ".png", ".html", ".js", ".css", ".typed"}
    }
    assert expected <= names, sorted(expected - names)
    for needed in ("torchgrabcut/data/astronaut.png", "torchgrabcut/server/static/index.html", "torchgrabcut/py.typed"):
        assert needed in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "torchgrabcut = torchgrabcut.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.skipif(shutil.which("nm") is None or not sys.platform.startswith("linux"), reason="needs binutils' nm")
def test_the_extension_exports_no_copy_of_the_cxx_runtime() -> None:
    """A libstdc++ linked statically into _C must stay private (setup.py: --exclude-libs).

    Exported, its stream code mixed with the libstdc++ that torch loaded, and every
    error message with a number in it crashed the process (seen with the GPU machine's
    g++). std::ostream::_M_insert<long> is defined by libstdc++ itself, never by user
    code (an extern template), so it is exported only when the runtime was copied in.
    """
    import torchgrabcut._C as ext

    proc = subprocess.run(
        ["nm", "-D", "--defined-only", str(ext.__file__)], capture_output=True, text=True, timeout=60, check=True
    )
    exported = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    runtime = {name for name in exported if name.startswith(("_ZNSo9_M_insert", "_ZNSt6locale", "_ZNSt8ios_base"))}
    assert not runtime, sorted(runtime)[:5]
