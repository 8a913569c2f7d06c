"""The dataset job: GrabCut on every box of a COCO file, on one process or a torchrun group.

:func:`run_dataset` reads as the job's steps; each step's details live in its own
module:

- :mod:`.options`: the settings and their checks;
- :mod:`.distributed`: the torchrun group. Rank ``r`` of ``n`` takes the images
  with annotations that no part file holds yet, number ``r, r + n, ...`` of them,
  and writes its own part; then rank 0 gathers every rank's output share, writes
  the output from them, prints the summary and removes the parts folder;
- :mod:`.plan`: reading the file, boxes, crops, skips, ground truth;
- :mod:`.pipeline` and :mod:`.calls`: a rank's images read, segmented in sorted
  batches and post-processed into its part file;
- :mod:`.parts`: resumable part files and the merge;
- :mod:`.summary` and :mod:`.timing`: what rank 0 prints.

Malformed ground truth (a segmentation that :func:`~.plan.segmentation_error`
refuses: NaN or far-out polygon coordinates, RLE counts that do not add up to the
image, a counts string that does not decode, a wrong type) never stops the run:
the box is segmented as usual, the annotation gets ``grabcut_gt_error`` instead of
``grabcut_iou``, it is left out of the mean IoU, and rank 0 prints one warning
line with their number and first ids.

Nor does an image that cannot be read (truncated, corrupt, not an image, over the
pixel limit, or of another size than its record says): its annotations that would
have been segmented get ``grabcut_error`` (the reason) and keep their segmentation,
the others keep their ``grabcut_skipped``; rank 0 prints one warning line and the
command exits with status 4. With ``strict`` the first such image stops the job, as
before, and an image an earlier run marked is read again.

Everything else wrong with the input stops the job at start, before any image is
read: see :mod:`.plan` and :mod:`.options`, and :mod:`.lock` for a second job on
the same output.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

import torch

from torchgrabcut.dataset.distributed import (
    Rank,
    broadcast_from_rank0,
    gather_shares,
    join_group,
    leave_group,
    rank_share,
)
from torchgrabcut.dataset.lock import OutputLock
from torchgrabcut.dataset.options import DatasetOptions, check_image_files, check_options
from torchgrabcut.dataset.parts import (
    OutputShare,
    PartWriter,
    check_run_config,
    finished_images,
    parts_dir,
    read_parts,
    remove_parts,
    write_output,
)
from torchgrabcut.dataset.pipeline import PostProcessor, segment_share
from torchgrabcut.dataset.plan import (
    ImagePlan,
    check_file_names,
    index_images,
    load_coco,
    plan_boxes,
    require_dataset_deps,
)
from torchgrabcut.dataset.summary import DatasetSummary, summarise
from torchgrabcut.dataset.timing import PhaseClock

__all__ = ["DatasetOptions", "DatasetSummary", "run_dataset"]


def run_dataset(opts: DatasetOptions) -> DatasetSummary | None:
    """Runs the job; the summary on rank 0 (or without torchrun), None on the other ranks."""
    mask_utils, tqdm = require_dataset_deps()
    check_options(opts)
    clock = PhaseClock()
    me, dev = join_group(opts.device)
    clock.end_phase()  # set-up
    frozen_by_caller = gc.get_freeze_count() > 0  # then the freeze below is left as it is
    lock: OutputLock | None = None
    try:
        lock = _lock_output(Path(opts.out), me)
        coco, digest = load_coco(opts.coco)
        # The input's millions of objects live for the whole run: moved out of the cyclic
        # collector's reach, its passes stop scanning them (they halved the planning time of
        # 10000 images), and DataLoader workers forked later do not copy their pages by
        # touching them.
        gc.freeze()
        plans = index_images(coco)
        check_file_names(plans, coco, opts.allow_outside_images)
        out = Path(opts.out)
        # An earlier run's finished images, used only once its settings are checked.
        done = finished_images(read_parts(parts_dir(out)), {p.image: p.anns for p in plans})
        if opts.strict:  # an image an earlier run marked unreadable is read again, and stops this run
            done = {i: line for i, line in done.items() if "error" not in line}
        todo = _plan_rank_share(plans, done, coco, opts, me)
        created = _check_resumable(parts_dir(out), digest, opts, done)
        if me.rank == 0 and not opts.quiet:
            print(
                f"dataset: {len(plans)} images with annotations, {sum(1 for p in plans if p.image in done)} already "
                f"done; {me.world} process{'es' if me.world > 1 else ''} on {dev}",
                flush=True,
            )
        share = OutputShare()
        stages = _segment(todo, opts, coco, dev, me, share, created, mask_utils, tqdm, clock)
        for p in rank_share([p for p in plans if p.image in done], me):  # its share of earlier runs' images
            share.add(coco, done[p.image], opts.keep_gt)
        clock.end_phase()  # segmenting
        shares = gather_shares(me, share)
        if me.rank != 0:
            return None
        clock.end_phase()  # waiting for other processes
        summary = _merge(out, coco, plans, shares, opts)
        clock.end_phase()  # merge
        summary.seconds, summary.phases = clock.seconds(), clock.phases()
        summary.world_size, summary.device, summary.stages = me.world, str(dev), stages
        return summary
    finally:
        if lock is not None:
            lock.release()
        if not frozen_by_caller:
            gc.unfreeze()
        leave_group(me)


def _lock_output(out: Path, me: Rank) -> OutputLock | None:
    """Rank 0's lock on the output (None on the other ranks); every rank stops when it is refused.

    Before the part files are read: a second job would otherwise count the same images
    as left to do. The other ranks wait for rank 0's answer, so that none of them
    starts on a part file while another job writes it.
    """
    lock: OutputLock | None = None
    refused: str | None = None
    if me.rank == 0:
        lock = OutputLock(out)
        try:
            lock.acquire()
        except RuntimeError as err:
            lock, refused = None, str(err)
        except OSError as err:  # a lock file another user owns, a read-only folder
            refused = f"--output: cannot lock {lock.path} ({err.strerror or err})"
            lock = None
    refused = broadcast_from_rank0(me, refused)
    if refused is not None:
        raise RuntimeError(refused)
    return lock


def _plan_rank_share(
    plans: list[ImagePlan], done: dict[int, Any], coco: dict[str, Any], opts: DatasetOptions, me: Rank
) -> list[ImagePlan]:
    """The rank's share of the images still to do, their boxes planned and their files checked."""
    # The images still to do are shared out, not the whole list: after an uneven stop (a
    # rank that finished its half, one that did not) every rank still gets an equal share,
    # and none waits in the gather for hours (NCCL's watchdog ends a wait after minutes).
    todo = rank_share([p for p in plans if p.image not in done], me)
    for p in todo:  # its share only: planning is one of the steps more processes would not shorten
        plan_boxes(p, coco, opts.margin, opts.min_margin)
    check_image_files(opts, plans, todo)
    return todo


def _check_resumable(pdir: Path, digest: str, opts: DatasetOptions, done: dict[int, Any]) -> bool:
    """Records this run's settings in the parts folder, or refuses ones that differ from the
    folder's finished images; True when the folder is new."""
    # After the checks of the input: a run that cannot start leaves no parts folder behind.
    # A folder without a finished image (a run that failed before its first chunk) holds
    # nothing to resume, so other settings (a corrected input) simply replace its record.
    created = not pdir.exists()
    check_run_config(
        pdir,
        {"input_sha256": digest, "margin": opts.margin, "min_margin": opts.min_margin, "max_iter": opts.max_iter},
        replace=not done,
    )
    return created


def _segment(
    todo: list[ImagePlan],
    opts: DatasetOptions,
    coco: dict[str, Any],
    dev: torch.device,
    me: Rank,
    share: OutputShare,
    created: bool,
    mask_utils: Any,
    tqdm: Any,
    clock: PhaseClock,
) -> dict[str, float]:
    """Segments the rank's images into its part file and share; the main thread's seconds per stage."""
    pdir = parts_dir(Path(opts.out))
    writer = PartWriter(pdir / f"rank{me.rank}.jsonl")
    bar = tqdm(total=len(todo), unit="img", disable=opts.quiet or me.rank != 0, dynamic_ncols=True)
    counts = {"images": 0, "boxes": 0}
    clock.end_phase()  # reading the input
    t_start = clock.marks[-1]

    def on_chunk(images: int, boxes: int) -> None:
        counts["images"] += images
        counts["boxes"] += boxes
        bar.update(images)
        bar.set_postfix_str(f"{counts['boxes'] / max(time.perf_counter() - t_start, 1e-9):.0f} boxes/s", refresh=False)

    post = PostProcessor(coco, writer, mask_utils, on_chunk, share, opts.keep_gt)
    try:
        stages = segment_share(todo, opts, coco, dev, post)
        t = time.perf_counter()
        post.finish()
        stages["wait_post"] += time.perf_counter() - t
    except BaseException:
        if created and me.world == 1 and not writer.wrote:
            writer.close()
            remove_parts(pdir)  # failed before its first chunk: nothing to resume, nothing left behind
        raise
    finally:
        bar.close()
        writer.close()
    share.run_images, share.run_boxes = counts["images"], counts["boxes"]
    return stages


def _merge(
    out: Path, coco: dict[str, Any], plans: list[ImagePlan], shares: list[OutputShare], opts: DatasetOptions
) -> DatasetSummary:
    """Rank 0: the output from every rank's share, the parts folder removed, the summary's counts."""
    write_output(out, coco, shares, [p.image for p in plans])
    if not opts.keep_parts:
        remove_parts(parts_dir(out))
    summary = summarise(out, plans, shares)
    if summary.gt_errors:  # printed even with --quiet: the mean IoU leaves these annotations out
        print(f"dataset: {summary.gt_warning()}", file=sys.stderr, flush=True)
    if summary.image_errors:  # even with --quiet: these annotations have no mask
        print(f"dataset: {summary.image_warning()}", file=sys.stderr, flush=True)
    return summary
