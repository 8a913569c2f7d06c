"""Smoke test of an installed torchgrabcut (a wheel in a fresh venv, or another torch).

Run it with the Python of the environment under test, from outside the source tree so
that the installed package is the one imported:

    python smoke_installed.py --write ref.npz          # masks of a known-good build (the pinned torch)
    python smoke_installed.py --reference ref.npz      # this build must give the same masks

Checks: the package imports and says what it was built against; its torch is the
release it was built for; the CPU op segments the bundled image; the operator's
registration passes torch.library.opcheck; `torchgrabcut --help` runs; with
--grabcut50, one GrabCut-50 image is segmented too; with --reference, every mask equals
the reference build's pixel for pixel; with --no-toolchain, no compiler or CUDA toolkit
is reachable (the wheel must not need one). With --cuda, the same masks on the GPU.
Needs only torch, numpy and pillow (the package's own requirements), no pytest.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"smoke: FAILED: {message}")


def grabcut50_case(root: Path) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    from torchgrabcut.imageio import read_image

    with open(root / "boxes.csv", newline="", encoding="utf-8") as f:
        row = next(iter(csv.DictReader(f)))
    box = (int(row["x0"]), int(row["y0"]), int(row["x1"]), int(row["y1"]))
    return read_image(root / "images" / row["name"]), box


def masks(device: str | None, grabcut50: Path | None) -> dict[str, np.ndarray]:
    import torchgrabcut
    from torchgrabcut.data import BUNDLED_BOX, BUNDLED_IMAGE
    from torchgrabcut.imageio import read_image

    out = {"bundled": np.asarray(torchgrabcut.grabcut(read_image(BUNDLED_IMAGE), box=BUNDLED_BOX, device=device))}
    if grabcut50 is not None:
        image, box = grabcut50_case(grabcut50)
        out["grabcut50"] = np.asarray(torchgrabcut.grabcut(image, box=box, device=device))
    return out


def opcheck() -> None:
    rng = np.random.default_rng(0)
    image = torch.from_numpy(rng.integers(0, 256, (1, 3, 24, 32), dtype=np.uint8))
    image[:, :, 4:20, 4:28] //= 4  # a darker object inside the box
    mask = torch.zeros(1, 24, 32, dtype=torch.uint8)
    mask[:, 4:20, 4:28] = 3
    model = torch.zeros(1, 10, 13, dtype=torch.float64)
    args = (list(image.unbind(0)), list(mask.unbind(0)), model, 3, 5, 50.0, 0, True, False)
    torch.library.opcheck(torch.ops.torchgrabcut.grabcut.default, args)


def loaded_cudart() -> str:
    """Which libcudart the process mapped (torch's own, from its nvidia packages, or the system's)."""
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "unknown"
    paths = sorted({line.split()[-1] for line in maps if "libcudart" in line})
    return ", ".join(paths) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the masks here (.npz)")
    parser.add_argument("--reference", type=Path, help="compare the masks with these (.npz)")
    parser.add_argument("--grabcut50", type=Path, help="GrabCut-50 folder (its first image is segmented too)")
    parser.add_argument("--no-toolchain", action="store_true", help="require that no compiler or nvcc is reachable")
    parser.add_argument("--cuda", action="store_true", help="also run on the GPU and require the same masks")
    args = parser.parse_args()
    if args.grabcut50 is not None and not (args.grabcut50 / "boxes.csv").exists():
        print(f"smoke: no GrabCut-50 at {args.grabcut50}: the bundled image only")
        args.grabcut50 = None

    import torchgrabcut
    from torchgrabcut import _build_info
    from torchgrabcut._ops import cuda_kernels_built

    where = Path(torchgrabcut.__file__).parent
    print(
        f"smoke: torchgrabcut from {where}, built for torch {_build_info.TORCH_VERSION} "
        f"(CUDA {_build_info.TORCH_CUDA}, archs {_build_info.CUDA_ARCH_LIST}); running on torch {torch.__version__}"
    )
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    check(_build_info.TORCH_VERSION.startswith(release + "."), "built for another torch release")
    if args.no_toolchain:
        found = {tool: shutil.which(tool) for tool in ("c++", "g++", "gcc", "cc", "clang", "nvcc")}
        check(not any(found.values()), f"a toolchain is reachable: {found}")
        check("CUDA_HOME" not in os.environ, "CUDA_HOME is set")

    computed = masks("cpu", args.grabcut50)
    for name, mask in computed.items():
        fg = int(((mask == 1) | (mask == 3)).sum())
        check(0 < fg < mask.size, f"{name}: a mask with {fg} foreground pixels of {mask.size}")
        print(f"smoke: CPU mask of {name}: {mask.shape}, {fg} foreground pixels")
    print(f"smoke: CUDA kernels built: {cuda_kernels_built()}; CUDA runtime loaded from {loaded_cudart()}")
    if args.cuda:
        check(cuda_kernels_built() and torch.cuda.is_available(), "--cuda: no CUDA kernels or no GPU")
        on_gpu = masks("cuda", args.grabcut50)
        for name, mask in on_gpu.items():
            check(np.array_equal(mask, computed[name]), f"{name}: the GPU mask differs from the CPU mask")
        print(f"smoke: GPU masks equal the CPU masks ({', '.join(on_gpu)})")
    opcheck()
    print("smoke: opcheck passed")
    # An installed package has its console script beside the interpreter; a source
    # tree on PYTHONPATH (the reference build) has none, and runs as a module.
    cli = Path(sys.executable).with_name("torchgrabcut")
    installed = Path(sys.prefix).resolve() in where.resolve().parents
    check(cli.exists() or not installed, f"installed without its console script {cli}")
    command = [str(cli), "--help"] if cli.exists() else [sys.executable, "-m", "torchgrabcut", "--help"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0 and "segment" in proc.stdout, f"torchgrabcut --help: {proc.returncode} {proc.stderr}")
    print("smoke: torchgrabcut --help works")
    if args.write is not None:
        np.savez_compressed(args.write, **computed)
        print(f"smoke: masks written to {args.write}")
    if args.reference is not None:
        with np.load(args.reference) as reference:
            check(set(reference.files) == set(computed), f"reference has {reference.files}, computed {list(computed)}")
            for name in reference.files:
                differ = int((reference[name] != computed[name]).sum())
                check(differ == 0, f"{name}: {differ} pixels differ from the reference build's mask")
        print(f"smoke: masks equal the reference build's ({', '.join(computed)})")
    print("smoke: all passed")


if __name__ == "__main__":
    main()
