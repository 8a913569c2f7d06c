"""What rank 0 prints at the end of a dataset run.

Images and annotations of the file, boxes segmented, annotations skipped by
reason, empty masks, mean IoU against ground truth (the mean over segmented
annotations that had a segmentation in the input, scored with pycocotools' RLE
IoU), and this run's boxes per second (all ranks' boxes over the wall time of
the run). Images that could not be read and their annotations left unsegmented are
counted on the first line, and named in a warning line of their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchgrabcut.dataset.parts import OutputShare
from torchgrabcut.dataset.plan import ImagePlan
from torchgrabcut.dataset.timing import PHASES

__all__ = ["GT_ERROR_IDS", "DatasetSummary", "summarise"]

GT_ERROR_IDS = 5  # annotation ids named in the warning about malformed ground truth
UNREADABLE_NAMES = 3  # image file names named in the warning about images that could not be read


@dataclass
class DatasetSummary:
    out: Path
    images: int  # images that have annotations
    annotations: int  # their annotations
    boxes: int  # annotations segmented
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    empty: int = 0  # segmented annotations whose mask came out empty
    iou_mean: float | None = None  # against ground truth, over iou_count annotations
    iou_count: int = 0
    # segmented annotations whose ground truth was malformed (not scored): how many, and the
    # first GT_ERROR_IDS of them as (annotation "id", reason), in file order
    gt_errors: int = 0
    gt_error_examples: list[tuple[Any, str]] = field(default_factory=list)
    # images that could not be read (their annotations marked 'grabcut_error', not segmented):
    # how many, their annotations that would have been segmented, and the first
    # UNREADABLE_NAMES as (file_name, reason), in file order
    image_errors: int = 0
    not_segmented: int = 0
    image_error_examples: list[tuple[str, str]] = field(default_factory=list)
    run_images: int = 0  # done by this run (all ranks), the rest came from part files
    run_boxes: int = 0
    seconds: float = 0.0  # wall time of this run
    world_size: int = 1
    device: str = "cpu"
    # rank 0's main thread: seconds waiting; the call threads: see timing.call_timeline
    stages: dict[str, float] = field(default_factory=dict)
    # rank 0's wall time by phase (timing.PHASES, in order); they add up to ``seconds``. Only
    # "segmenting" shrinks with more processes: the rest bounds a multi-GPU speed-up.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def boxes_per_second(self) -> float:
        return self.run_boxes / self.seconds if self.seconds > 0 else 0.0

    def format(self) -> str:
        skipped = sum(self.skipped.values())
        why = ", ".join(f"{n} {r}" for r, n in sorted(self.skipped.items()))
        lines = [
            f"dataset: {self.images} images, {self.annotations} annotations: {self.boxes} boxes segmented, "
            f"{skipped} skipped"
            + (f" ({why})" if why else "")
            + f", {self.empty} empty masks"
            + (
                f", {self.not_segmented} annotation{'s' if self.not_segmented != 1 else ''} not segmented "
                f"({self.image_errors} unreadable image{'s' if self.image_errors != 1 else ''})"
                if self.image_errors
                else ""
            ),
            f"this run: {self.run_images} images, {self.run_boxes} boxes in {self.seconds:.1f} s, "
            f"{self.boxes_per_second:.1f} boxes/s ({self.world_size} process{'es' if self.world_size > 1 else ''}, "
            f"{self.device})",
            (
                f"mean IoU vs ground truth: {self.iou_mean:.4f} over {self.iou_count} boxes with a segmentation"
                if self.iou_mean is not None
                else "mean IoU vs ground truth: none (no annotation had a segmentation)"
            )
            + (f" ({self.gt_errors} malformed, not scored)" if self.gt_errors else ""),
            f"output: {self.out}",
        ]
        if self.phases:
            lines.insert(2, "time: " + ", ".join(f"{name} {self.phases.get(name, 0.0):.1f} s" for name in PHASES))
        return "\n".join(lines)

    def gt_warning(self) -> str:
        """One line: how many annotations had malformed ground truth, their first ids and the first reason."""
        ids = ", ".join(repr(i) for i, _ in self.gt_error_examples)
        more = ", ..." if self.gt_errors > len(self.gt_error_examples) else ""
        first = self.gt_error_examples[0][1] if self.gt_error_examples else ""
        return (
            f"warning: {self.gt_errors} annotation{'s' if self.gt_errors != 1 else ''} with a malformed ground-truth "
            f"segmentation, segmented but not scored (marked 'grabcut_gt_error'; ids {ids}{more}; first: {first})"
        )

    def image_warning(self) -> str:
        """One line: how many images could not be read, what that did to their annotations, the first names."""
        n = self.image_errors
        names = ", ".join(repr(name) for name, _ in self.image_error_examples)
        more = ", ..." if n > len(self.image_error_examples) else ""
        first = self.image_error_examples[0][1] if self.image_error_examples else ""
        return (
            f"warning: {n} image{'s' if n != 1 else ''} could not be read ({names}{more}; first: {first}); "
            f"{'their' if n != 1 else 'its'} {self.not_segmented} annotation{'s' if self.not_segmented != 1 else ''} "
            f"to segment {'are' if self.not_segmented != 1 else 'is'} marked 'grabcut_error', without a mask "
            "(exit status 4)"
        )


def summarise(out: Path, plans: list[ImagePlan], shares: list[OutputShare]) -> DatasetSummary:
    """The counts of every rank's share; the timings are the caller's to fill in."""
    s = DatasetSummary(out=out, images=len(plans), annotations=sum(len(p.anns) for p in plans), boxes=0)
    ious = [v for share in shares for v in share.ious]
    for share in shares:
        s.boxes += share.boxes
        s.empty += share.empty
        s.run_images += share.run_images
        s.run_boxes += share.run_boxes
        for reason, n in share.skipped.items():
            s.skipped[reason] = s.skipped.get(reason, 0) + n
    s.iou_count = len(ious)
    errors = sorted(e for share in shares for e in share.gt_errors)  # (annotation index, id, reason)
    s.gt_errors = len(errors)
    s.gt_error_examples = [(ann_id, why) for _, ann_id, why in errors[:GT_ERROR_IDS]]
    unreadable = sorted(e for share in shares for e in share.unreadable)  # (image index, reason)
    names = {p.image: p.file_name for p in plans} if unreadable else {}
    s.image_errors, s.not_segmented = len(unreadable), sum(share.not_segmented for share in shares)
    s.image_error_examples = [(names[i], why) for i, why in unreadable[:UNREADABLE_NAMES]]
    # fsum is exact, so the mean does not depend on how the images were shared out
    s.iou_mean = math.fsum(ious) / len(ious) if ious else None
    return s
