"""The dataset job's settings (what ``torchgrabcut dataset`` parses) and their checks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DatasetOptions", "check_options"]


@dataclass
class DatasetOptions:
    coco: Path
    images: Path
    out: Path
    device: str | None = None
    batch_size: int = 128
    margin: float = 0.1
    min_margin: int = 8
    max_iter: int = 5
    workers: int = 4
    keep_gt: bool = False
    keep_parts: bool = False
    quiet: bool = False


def check_options(o: DatasetOptions) -> None:
    def whole(name: str, v: object, low: int) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {v!r}")

    whole("--batch-size", o.batch_size, 1)
    whole("--min-margin", o.min_margin, 0)
    whole("--max-iter", o.max_iter, 0)
    whole("--workers", o.workers, 0)
    if not isinstance(o.margin, (int, float)) or not 0 <= o.margin <= 10:
        raise ValueError(f"--margin: expected a fraction of the box size in 0..10, got {o.margin!r}")
    if not Path(o.images).is_dir():
        raise FileNotFoundError(f"--images: no such folder: {o.images}")
    out = Path(o.out)
    if not out.parent.is_dir():
        raise FileNotFoundError(f"--output: no such folder: {out.parent}")
    if out.is_dir():
        raise ValueError(f"--output: {out} is a folder; expected a file name")
    # The same file by any spelling (.., a symbolic or hard link): writing there would replace
    # the input, ground truth included, before a rerun could read it.
    if out.exists() and Path(o.coco).exists() and os.path.samefile(out, o.coco):
        raise ValueError(f"--output: {out} is the input file (--coco {o.coco}); write the output to another file")
