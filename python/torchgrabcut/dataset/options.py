"""The dataset job's settings (what ``torchgrabcut dataset`` parses) and their checks."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchgrabcut.dataset.plan import ImagePlan

__all__ = ["DatasetOptions", "check_image_files", "check_options"]


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
    strict: bool = False  # an image that cannot be read stops the job (default: marked, the job goes on)
    allow_outside_images: bool = False  # file_name values may leave --images (absolute, '..')


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
    if not os.access(out.parent, os.W_OK | os.X_OK):
        # found now, not by the merge at the end of the run
        raise PermissionError(f"--output: cannot create files in {out.parent} (permission denied)")


def check_image_files(o: DatasetOptions, plans: list[ImagePlan], todo: list[ImagePlan]) -> None:
    """Refuses an --output that is one of the images, and image files of ``todo`` that are missing.

    The output by any spelling (``..``, a symbolic link, a linked folder, a hard link)
    would be replaced by the JSON, and the next run would fail on it. Every image of
    ``plans`` is compared by path (``realpath`` of the output against the normalised
    path of the image: strings only); the images this process reads (``todo``) are
    also compared by (st_dev, st_ino), from the one ``stat`` that looks for them
    anyway, so that hard links are found without a pass of its own over the images.
    """
    out = Path(o.out)
    out_real = os.path.realpath(out)
    root = os.path.realpath(o.images)
    base = os.path.basename(out_real)
    for p in plans:  # endswith first: a million joins would cost seconds, a million endswith little
        if p.file_name.endswith(base) and os.path.normpath(os.path.join(root, p.file_name)) == out_real:
            raise _output_is_image(out, p)
    try:
        st = os.stat(out)
        out_id: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except OSError:  # not there yet: no image can be it
        out_id = None
    missing = []
    for p in todo:
        if not p.needs_image():
            continue
        try:
            st = os.stat(Path(o.images) / p.file_name)
        except OSError:
            missing.append(p.file_name)
            continue
        if not stat.S_ISREG(st.st_mode):
            missing.append(p.file_name)
        elif (st.st_dev, st.st_ino) == out_id:
            raise _output_is_image(out, p)
    if missing:
        raise FileNotFoundError(f"--images: {len(missing)} image files missing under {o.images} (first: {missing[0]})")


def _output_is_image(out: Path, p: ImagePlan) -> ValueError:
    return ValueError(
        f"--output: {out} is the input image {p.file_name!r} (images[{p.image}]); write the output to another file"
    )
