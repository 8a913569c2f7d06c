"""`torchgrabcut dataset`: argument parsing; the work is in :mod:`torchgrabcut.dataset.job`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["EXIT_IMAGE_ERRORS", "add_parser", "run"]

# The output was written, but some images could not be read (their annotations are
# marked 'grabcut_error'): a script sees it without parsing the warning.
EXIT_IMAGE_ERRORS = 4

DESCRIPTION = """\
Box-to-mask for a dataset: reads COCO annotations, runs GrabCut on every box
(a crop with a margin around it; crops of like size go to the device together,
--batch-size per call) and writes the same file with each annotation's
'segmentation' replaced by the mask as COCO RLE and 'area' by the mask's area.
An annotation that had a segmentation is the ground truth: its IoU is stored as
'grabcut_iou' and the mean is reported (a malformed one, such as NaN coordinates
or RLE counts that do not add up to the image, is marked 'grabcut_gt_error' and
not scored). Crowd regions, boxes under 2 px and boxes outside the image are
kept unchanged, marked with 'grabcut_skipped'. An image that cannot be read
(truncated, corrupt, over the pixel limit, or of another size than its record)
does not stop the job: its annotations are kept unchanged, marked with
'grabcut_error' (the reason), unless --strict.

Everything else wrong with the input stops the job at start, in one line: ids,
sizes, boxes, file names outside --images, text that cannot be written back as
UTF-8, an output that is an input, a second job on the same output.

Exit status: 0 done; 4 done, but some images could not be read (see the
warning); 2 stopped on an error (nothing lost: rerun to continue); 130
interrupted (Ctrl-C; rerun to continue).

Resumable: finished images go to FILE.parts/ as the run goes; a run that was
killed continues where it stopped when started again with the same settings.
The output is the same, byte for byte, however the run was split.

Several GPUs (or CPU processes): torchrun --standalone --nproc-per-node N -m torchgrabcut dataset ...
each process takes its share of the images; process 0 merges and reports."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dataset",
        help="GrabCut on every box of a COCO annotation file: instance masks as COCO RLE",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--coco", required=True, metavar="FILE", help="COCO annotation file (JSON with 'images' and 'annotations')"
    )
    p.add_argument(
        "--images", required=True, metavar="DIR", help="folder the images' 'file_name' entries are relative to"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write the annotated file (progress is kept in FILE.parts/)",
    )
    p.add_argument(
        "--device",
        default=None,
        metavar="DEV",
        help="cpu or cuda (default: cuda when usable); under torchrun each process uses cuda:LOCAL_RANK",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=128,
        metavar="N",
        help="boxes per GrabCut call (default 128); on a GPU two calls run at once, and a call that does not "
        "fit in its memory is split in halves and retried (256 suits an 80 GB+ GPU)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=0.1,
        metavar="F",
        help="context around each box, as a fraction of its width (left, right) and height (top, bottom); "
        "the background is learnt from it (default 0.1)",
    )
    p.add_argument(
        "--min-margin", type=int, default=8, metavar="PX", help="context of at least this many pixels (default 8)"
    )
    p.add_argument("--max-iter", type=int, default=5, metavar="N", help="GrabCut iterations (default 5)")
    p.add_argument(
        "--workers",
        type=int,
        default=4,
        metavar="N",
        help="DataLoader processes that decode images, per process of the job (default 4; 0 = none, decode inline)",
    )
    p.add_argument("--keep-gt", action="store_true", help="keep each replaced segmentation as 'segmentation_gt'")
    p.add_argument("--keep-parts", action="store_true", help="keep FILE.parts/ after merging (default: remove)")
    _add_input_flags(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(handler=run)


def _add_input_flags(p: argparse.ArgumentParser) -> None:
    """How the job treats images it cannot read, and file names outside --images."""
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first image that cannot be read (default: mark its annotations 'grabcut_error' and go on)",
    )
    p.add_argument(
        "--allow-outside-images",
        action="store_true",
        help="read 'file_name' values that leave --images (absolute paths, '..'); refused by default",
    )


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: --help and the other commands do not load the job (~0.1 s).
    from torchgrabcut.dataset.job import DatasetOptions, run_dataset

    summary = run_dataset(
        DatasetOptions(
            coco=Path(args.coco),
            images=Path(args.images),
            out=Path(args.output),
            device=args.device,
            batch_size=args.batch_size,
            margin=args.margin,
            min_margin=args.min_margin,
            max_iter=args.max_iter,
            workers=args.workers,
            keep_gt=args.keep_gt,
            keep_parts=args.keep_parts,
            quiet=args.quiet,
            strict=args.strict,
            allow_outside_images=args.allow_outside_images,
        )
    )
    if summary is not None and not args.quiet:
        print(summary.format(), flush=True)
    return EXIT_IMAGE_ERRORS if summary is not None and summary.image_errors else 0
