"""Builds torchgrabcut's PyTorch extension from csrc/ (core, cuda, torch bindings).

It builds against the torch installed in the running Python, so install torch first
and build without isolation (`pip install --no-build-isolation .`): an isolated build
would compile against a different torch than the one the extension loads into.

The CUDA backend is chosen by an explicit switch, never by whether a GPU happens
to be visible at build time:

    TORCHGRABCUT_CUDA=1     build the CUDA kernels (fails if nvcc is missing or unusable)
    TORCHGRABCUT_CUDA=0     CPU only
    TORCHGRABCUT_CUDA=auto  (default) CUDA when nvcc is found and torch is a CUDA build

TORCH_CUDA_ARCH_LIST defaults to "9.0" (Hopper) when unset; a wheel for other GPUs
sets it (README, "Install"). TORCHGRABCUT_DEBUG_INFO=1 keeps debug information in
the library (22 MB of a 23 MB build; the Makefile's development build keeps it).
TORCHGRABCUT_TEST_HOOKS=1 (set by the Makefile's development build, never by a wheel)
also registers the ops that only the tests call.

Checked before anything is compiled, each with a message that says what to change:
torch is importable; the C++ compiler compiles C++20 (torch 2.14 and later require it;
we build every torch-facing file as C++20); nvcc's CUDA major version equals
torch.version.cuda's (a minor difference is allowed, as torch's own check allows it).

The built package requires the torch it was compiled against (torch==MAJOR.MINOR.*),
and torchgrabcut/_build_info.py records it, so that importing the extension into
another torch says which torch it was built for instead of failing on a missing symbol.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import find_packages, setup

ROOT = os.path.dirname(os.path.abspath(__file__))
REBUILD = "pip install --no-build-isolation --force-reinstall --no-deps ."
BASE_REQUIREMENTS = ["numpy>=1.23", "pillow>=9"]
CXX_STANDARD = "c++20"

try:
    import torch
    from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension
except ImportError as err:  # pragma: no cover - exercised by users without torch
    sys.exit(
        "torchgrabcut: building needs PyTorch installed in this Python first "
        f"({sys.executable}: {err}).\n"
        "  Install the torch you want (pip install torch), then build against it without isolation:\n"
        "  pip install --no-build-isolation ."
    )


def fail(message: str) -> None:
    sys.exit(f"torchgrabcut: {message}")


def host_flags() -> list[str]:
    """The flags every host compile of our sources gets (csrc/host_flags.txt, shared with CMake)."""
    with open(os.path.join(ROOT, "csrc", "host_flags.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip().startswith("-")]


def torch_major_minor() -> str:
    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def find_nvcc() -> str | None:
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = os.path.join(cuda_home, "bin", "nvcc")
    return candidate if os.path.exists(candidate) else shutil.which("nvcc")


@functools.cache  # asked by the toolkit check and by the build line: one `nvcc --version`
def nvcc_release(nvcc: str) -> str:
    """'13.0' from `nvcc --version` ("Cuda compilation tools, release 13.0, V13.0.88")."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as err:
        fail(f"could not run {nvcc} --version: {err}")
    match = re.search(r"release (\d+)\.(\d+)", out)
    if match is None:
        fail(f"could not read the CUDA version from `{nvcc} --version`:\n{out}")
    return f"{match.group(1)}.{match.group(2)}"


def check_cuda_toolkit(nvcc: str) -> str | None:
    """Why the CUDA kernels cannot be built with this nvcc and this torch, or None."""
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build; the CUDA kernels need a CUDA build of torch"
    release = nvcc_release(nvcc)
    if release.split(".")[0] != torch.version.cuda.split(".")[0]:
        return (
            f"{nvcc} is CUDA {release}, but torch {torch.__version__} was built with CUDA {torch.version.cuda}: "
            "their major versions must match. Point CUDA_HOME at a CUDA "
            f"{torch.version.cuda.split('.')[0]}.x toolkit, or install the torch built for CUDA {release}"
        )
    if release != torch.version.cuda:
        print(
            f"torchgrabcut: note: nvcc is CUDA {release}, torch was built with CUDA {torch.version.cuda} "
            "(same major version: supported)"
        )
    return None


def want_cuda() -> str | None:
    """The nvcc to build the CUDA kernels with, or None for a CPU-only build."""
    switch = os.environ.get("TORCHGRABCUT_CUDA", "auto").strip().lower()
    if switch in ("0", "off", "false", "no"):
        return None
    if switch not in ("1", "on", "true", "yes", "auto"):
        fail(f"TORCHGRABCUT_CUDA: expected 1, 0 or auto, got {switch!r}")
    nvcc = find_nvcc()
    required = switch != "auto"
    if nvcc is None:
        if required:
            fail("TORCHGRABCUT_CUDA=1 but nvcc was not found (set CUDA_HOME to the CUDA toolkit)")
        return None
    problem = check_cuda_toolkit(nvcc)
    if problem is not None:
        if required or torch.version.cuda is not None:
            # A CUDA torch with a mismatched toolkit: building CPU-only silently would
            # surprise the user later; say what to change (or TORCHGRABCUT_CUDA=0).
            fail(problem + " (or build the CPU kernels only: TORCHGRABCUT_CUDA=0)")
        print(f"torchgrabcut: {problem}: building the CPU kernels only")
        return None
    return nvcc


def check_cxx_compiler() -> None:
    """The compiler torch's build uses must compile C++20 (torch's headers need it from 2.14 on)."""
    cxx = os.environ.get("CXX", "c++")
    probe = "#if __cplusplus < 202002L\n#error not C++20\n#endif\n#include <concepts>\nint main() { return 0; }\n"
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.cpp")
        with open(source, "w", encoding="utf-8") as f:
            f.write(probe)
        try:
            proc = subprocess.run(
                [cxx, f"-std={CXX_STANDARD}", "-fsyntax-only", source], capture_output=True, text=True, timeout=120
            )
        except (OSError, subprocess.SubprocessError) as err:
            fail(f"could not run the C++ compiler {cxx!r} ({err}); set CXX to a C++20 compiler (g++ >= 10)")
        if proc.returncode != 0:
            try:
                version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
                version = version.splitlines()[0] if version else "unknown version"
            except (OSError, subprocess.SubprocessError):
                version = "unknown version"
            fail(
                f"the C++ compiler {cxx!r} ({version}) cannot compile C++20, which the torch headers and "
                "torchgrabcut need: install g++ >= 10 or clang >= 12 and set CXX to it\n" + proc.stderr[-2000:]
            )


def rel(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))


def write_build_info(cuda_archs: str | None) -> None:
    """torchgrabcut/_build_info.py: what this build was compiled against (read at import)."""
    lines = [
        '"""Written by setup.py at build time: the torch this extension was compiled against."""',
        "",
        f"TORCH_VERSION = {torch.__version__.split('+')[0]!r}",
        f"TORCH_CUDA = {torch.version.cuda if cuda_archs else None!r}",
        f"CUDA_ARCH_LIST = {cuda_archs!r}",
        f"REBUILD = {REBUILD!r}",
        "",
    ]
    path = os.path.join(ROOT, "python", "torchgrabcut", "_build_info.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def extension():  # type: ignore[no-untyped-def]
    check_cxx_compiler()
    sources = rel("csrc/core/*.cpp") + [p for p in rel("csrc/bindings/*.cpp") if not p.endswith("_cuda.cpp")]
    debug = ["-g"] if os.environ.get("TORCHGRABCUT_DEBUG_INFO") == "1" else ["-g0"]
    # The development build (make build) also registers the ops that only tests call;
    # a wheel or a pip install never does.
    hooks = ["-DTORCHGRABCUT_TEST_HOOKS"] if os.environ.get("TORCHGRABCUT_TEST_HOOKS") == "1" else []
    # Our own code builds warning-free; -Wno-unused-parameter keeps torch's headers quiet.
    host = host_flags()
    cxx = [
        "-O3",
        f"-std={CXX_STANDARD}",
        "-fopenmp",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-Wno-unused-parameter",
        *host,
        *debug,
        *hooks,
    ]
    include_dirs = [os.path.join(ROOT, "csrc")]
    # A libstdc++ linked statically into _C (some toolchains do) must keep its symbols
    # private: exported, they interleave with the libstdc++ torch loaded and crash.
    link = ["-fopenmp"] + (["-Wl,--exclude-libs,ALL"] if sys.platform.startswith("linux") else [])
    nvcc = want_cuda()
    if nvcc is not None:
        os.environ.setdefault("CUDA_HOME", os.path.dirname(os.path.dirname(nvcc)))
        archs = os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        print(
            f"torchgrabcut: building CPU + CUDA kernels for torch {torch.__version__} "
            f"(CUDA {torch.version.cuda}, nvcc {nvcc_release(nvcc)}, TORCH_CUDA_ARCH_LIST={archs}, {CXX_STANDARD})"
        )
        write_build_info(archs)
        sources += rel("csrc/cuda/*.cu") + rel("csrc/bindings/*_cuda.cpp")
        nvcc_flags = [
            "-O3",
            f"-std={CXX_STANDARD}",
            "-fmad=false",
            "--expt-relaxed-constexpr",
            "-Werror=all-warnings",
            "-Xcompiler",
            ",".join(["-fopenmp", *host, *debug]),
        ]
        return CUDAExtension(
            "torchgrabcut._C",
            sources,
            include_dirs=include_dirs,
            extra_compile_args={"cxx": cxx, "nvcc": nvcc_flags},
            extra_link_args=link,
        )
    print(f"torchgrabcut: building CPU kernels only for torch {torch.__version__} ({CXX_STANDARD})")
    write_build_info(None)
    return CppExtension(
        "torchgrabcut._C",
        sources,
        include_dirs=include_dirs,
        extra_compile_args={"cxx": cxx},
        extra_link_args=link,
    )


setup(
    packages=find_packages("python"),
    package_dir={"": "python"},
    # An extension loads only into the torch it was compiled against: pip then refuses
    # another torch instead of leaving a package that fails at import.
    install_requires=[f"torch=={torch_major_minor()}.*", *BASE_REQUIREMENTS],
    ext_modules=[] if os.environ.get("TORCHGRABCUT_SKIP_EXT") == "1" else [extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
