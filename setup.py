"""Builds torchgrabcut's PyTorch extension from csrc/ (core, cuda, torch bindings).

The CUDA backend is chosen by an explicit switch, never by whether a GPU happens
to be visible at build time:

    TORCHGRABCUT_CUDA=1     build the CUDA kernels (fails if nvcc is missing)
    TORCHGRABCUT_CUDA=0     CPU only
    TORCHGRABCUT_CUDA=auto  (default) CUDA when nvcc is found

TORCH_CUDA_ARCH_LIST defaults to "9.0" (Hopper) when unset. The Makefile builds the
extension in place (incrementally, with ninja) and then registers the package
editable with TORCHGRABCUT_SKIP_EXT=1, so that pip does not build it a second time.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda() -> bool:
    switch = os.environ.get("TORCHGRABCUT_CUDA", "auto").strip().lower()
    nvcc = shutil.which("nvcc") or (
        os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        if os.path.exists(os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"))
        else None
    )
    if switch in ("1", "on", "true", "yes"):
        if nvcc is None:
            raise RuntimeError("TORCHGRABCUT_CUDA=1 but nvcc was not found (set CUDA_HOME)")
        return True
    if switch in ("0", "off", "false", "no"):
        return False
    if switch != "auto":
        raise RuntimeError(f"TORCHGRABCUT_CUDA: expected 1, 0 or auto, got {switch!r}")
    return nvcc is not None and bool(glob.glob(os.path.join(ROOT, "csrc", "cuda", "*.cu")))


def rel(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))


def extension():  # type: ignore[no-untyped-def]
    sources = rel("csrc/core/*.cpp") + ["csrc/torch/ops.cpp"]
    # Our own code builds warning-free; -Wno-unused-parameter keeps torch's headers quiet.
    cxx = ["-O3", "-std=c++17", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
    include_dirs = [os.path.join(ROOT, "csrc")]
    # Some toolchains link libstdc++ statically into shared objects. Its symbols must
    # then stay private to _C: exported, they interleave with the libstdc++ that torch
    # loaded, and formatting a number into an error message crashed (a segfault on the
    # GPU machine's g++ 13 instead of the exception; bench/RESULTS.md, v0.4).
    link = ["-fopenmp"] + (["-Wl,--exclude-libs,ALL"] if sys.platform.startswith("linux") else [])
    if want_cuda():
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        print(f"torchgrabcut: building CPU + CUDA kernels (TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']})")
        sources += rel("csrc/cuda/*.cu") + rel("csrc/torch/*_cuda.cpp")
        nvcc = [
            "-O3",
            "-std=c++17",
            "-fmad=false",
            "--expt-relaxed-constexpr",
            "-Werror=all-warnings",
            "-Xcompiler",
            "-fopenmp",
        ]
        return CUDAExtension(
            "torchgrabcut._C",
            sources,
            include_dirs=include_dirs,
            extra_compile_args={"cxx": cxx, "nvcc": nvcc},
            extra_link_args=link,
        )
    print("torchgrabcut: building CPU kernels only")
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
    ext_modules=[] if os.environ.get("TORCHGRABCUT_SKIP_EXT") == "1" else [extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
