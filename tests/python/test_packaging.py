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
import torch

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
    # The run-time torch is the release the package was built against, nothing looser.
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    assert f"torch=={release}.*" in requires, requires
    assert not [r for r in requires if r.startswith("torch") and r != f"torch=={release}.*"], requires


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


def source_copy(tmp_path: Path) -> Path:
    """The files setup.py reads, copied: a check that wrongly passed would build there, not here."""
    src = tmp_path / "src"
    for name in ("setup.py", "pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("*.so", "__pycache__", "_build_info.py")
    shutil.copytree(ROOT / "csrc", src / "csrc", ignore=ignore)
    shutil.copytree(ROOT / "python", src / "python", ignore=ignore)
    return src


def run_setup(src: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "setup.py", *args], cwd=src, capture_output=True, text=True, env=env, timeout=300
    )


def fake_tool(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("switch", ["1", "auto"])
def test_the_build_refuses_an_nvcc_of_another_cuda_major_version(tmp_path: Path, switch: str) -> None:
    if torch.version.cuda is None:
        pytest.skip("a CPU-only torch builds the CPU kernels whatever nvcc is")
    src = source_copy(tmp_path)
    other = int(torch.version.cuda.split(".")[0]) - 1
    fake_tool(tmp_path / "cuda" / "bin" / "nvcc", f'echo "Cuda compilation tools, release {other}.4, V{other}.4.131"\n')
    env = dict(os.environ, CUDA_HOME=str(tmp_path / "cuda"), TORCHGRABCUT_CUDA=switch)
    proc = run_setup(src, env, "build_ext", "--inplace")
    assert proc.returncode != 0
    message = proc.stderr.strip().splitlines()[-1]
    assert message.startswith("torchgrabcut: "), proc.stderr[-2000:]
    assert f"CUDA {other}.4" in message and f"CUDA {torch.version.cuda}" in message and "CUDA_HOME" in message
    assert "TORCHGRABCUT_CUDA=0" in message
    assert not list(src.rglob("*.o")) and not list(src.rglob("*.so")), "it compiled before refusing"


def test_the_build_refuses_a_compiler_without_cxx20(tmp_path: Path) -> None:
    src = source_copy(tmp_path)
    old = fake_tool(
        tmp_path / "bin" / "old-g++",
        'case "$1" in --version) echo "g++ (Fake) 9.4.0";; '
        "*) echo \"c++: error: unrecognized command-line option '$1'\" >&2; exit 1;; esac\n",
    )
    env = dict(os.environ, CXX=str(old), TORCHGRABCUT_CUDA="0")
    proc = run_setup(src, env, "build_ext", "--inplace")
    assert proc.returncode != 0
    assert "cannot compile C++20" in proc.stderr and "g++ (Fake) 9.4.0" in proc.stderr and "CXX" in proc.stderr
    assert not list(src.rglob("*.o"))


def test_the_build_says_to_install_torch_first_when_it_cannot_see_one(tmp_path: Path) -> None:
    """What an isolated build (pip install . without --no-build-isolation) meets."""
    src = source_copy(tmp_path)
    hide_torch = (
        "import runpy, sys; sys.modules['torch'] = None; sys.argv = ['setup.py', '--version']; "
        "runpy.run_path('setup.py', run_name='__main__')"
    )
    proc = subprocess.run([sys.executable, "-c", hide_torch], cwd=src, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "needs PyTorch installed" in proc.stderr and "--no-build-isolation" in proc.stderr


def test_importing_into_another_torch_names_the_torch_it_was_built_for() -> None:
    code = (
        "import sys, types\n"
        "info = types.ModuleType('torchgrabcut._build_info')\n"
        "info.TORCH_VERSION, info.REBUILD = '1.13.1', 'the rebuild command'\n"
        "sys.modules['torchgrabcut._build_info'] = info\n"
        "import torchgrabcut\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: torchgrabcut was built for torch 1.13.1"), last
    assert torch.__version__ in last and "the rebuild command" in last and "torch==1.13.*" in last
