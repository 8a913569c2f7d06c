"""The dataset job: GrabCut on every box of a COCO file, on one process or a torchrun group.

Pipeline (per rank):

1. DataLoader workers (``workers`` processes, torch's own) read the rank's
   images with Pillow; each decoded image travels as one tensor in shared
   memory, and the main thread cuts a crop per box from it (see :mod:`.plan`).
2. The main thread gathers whole images into a chunk of about ``4 *
   batch_size`` boxes, sorts the chunk's crops by shape (orientation, then the
   longer side, then the shorter) so that crops of like size share a padded
   batch, and calls :func:`torchgrabcut.grabcut` on ``batch_size`` crops at a
   time. A crop's mask does not depend on the other crops of its call, so the
   sort changes the speed, never the result.
3. A post-processing thread pastes each crop's foreground into an empty mask of
   the image's size, encodes it as COCO RLE (pycocotools), computes the IoU
   with the annotation's ground-truth segmentation when it has one, and when a
   chunk is complete appends its images to the rank's part file (flushed and
   fsynced, see :mod:`.parts`) and their annotations' output texts to the
   rank's :class:`~.parts.OutputShare`. It overlaps the next chunk's GPU work.

Distributed: when launched by ``torchrun`` (``WORLD_SIZE`` and ``MASTER_ADDR``
set, one process or more) the job joins a ``torch.distributed`` group (NCCL
when computing on CUDA, each rank on ``cuda:LOCAL_RANK``; gloo on the CPU).
Rank ``r`` of ``n`` takes the images with annotations that no part file holds
yet, number ``r, r + n, ...`` of them, and writes its own part; then rank 0
gathers every rank's output share (``gather_object``), writes the output from
them, prints the summary and removes the parts folder. No pool or scheduler of
our own: torchrun starts the processes.

Summary (rank 0): images and annotations of the file, boxes segmented,
annotations skipped by reason, empty masks, mean IoU against ground truth (the
mean over segmented annotations that had a segmentation in the input, scored
with pycocotools' RLE IoU), and this run's boxes per second (all ranks' boxes
over the wall time of the run).

Malformed ground truth (a segmentation that :func:`~.plan.segmentation_error`
refuses: NaN or far-out polygon coordinates, RLE counts that do not add up to the
image, a counts string that does not decode, a wrong type) never stops the run
and never reaches pycocotools: the box is segmented as usual, the annotation gets
``grabcut_gt_error`` (the reason) instead of ``grabcut_iou``, it is left out of
the mean IoU, and rank 0 prints one warning line with their number and first ids.

Test hooks (undocumented in ``--help``): ``TORCHGRABCUT_DATASET_EXIT_AFTER=k``
makes the process exit at once (``os._exit(3)``, no cleanup, as a kill) after it
has written ``k`` chunks; ``TORCHGRABCUT_DATASET_BLOCK_AFTER=k`` makes its
post-processing thread wait forever after ``k`` chunks, so that the run cannot
finish however fast the machine is (a Ctrl-C test then interrupts it).
"""

from __future__ import annotations

import gc
import math
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchgrabcut.coco.parts import (
    OutputShare,
    PartWriter,
    check_run_config,
    parts_dir,
    read_parts,
    remove_parts,
    write_output,
)
from torchgrabcut.coco.plan import (
    ImagePlan,
    gt_rle,
    index_images,
    load_coco,
    plan_boxes,
    replan_with_size,
    require_dataset_deps,
)

__all__ = ["DatasetOptions", "DatasetSummary", "run_dataset"]

# The phases of a run's wall time, on rank 0: joining the group and starting CUDA, reading
# and planning the input, its own share of the boxes, waiting for (and gathering from) the
# other processes, writing the output and the summary.
PHASES = ("set-up", "reading the input", "segmenting", "waiting for other processes", "merge")
# The group's one collective (gathering the output shares) waits for the slowest process;
# NCCL's default watchdog (10 minutes) would end a long job whose processes finish
# further apart than that, so the wait may last as long as a day.
GROUP_TIMEOUT = timedelta(hours=24)
CHUNK_BATCHES = 4  # a chunk (the unit of sorting and of durable progress) is this many batches of boxes
EXIT_AFTER_ENV = "TORCHGRABCUT_DATASET_EXIT_AFTER"
BLOCK_AFTER_ENV = "TORCHGRABCUT_DATASET_BLOCK_AFTER"


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
    run_images: int = 0  # done by this run (all ranks), the rest came from part files
    run_boxes: int = 0
    seconds: float = 0.0  # wall time of this run
    world_size: int = 1
    device: str = "cpu"
    # rank 0's main thread: seconds waiting; the call threads: see _Calls.timeline
    stages: dict[str, float] = field(default_factory=dict)
    # rank 0's wall time by phase (PHASES, in order); they add up to ``seconds``. Only
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
            f"{skipped} skipped" + (f" ({why})" if why else "") + f", {self.empty} empty masks",
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


GT_ERROR_IDS = 5  # annotation ids named in the warning about malformed ground truth


def _check_options(o: DatasetOptions) -> None:
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


# -- distributed ---------------------------------------------------------------------------------


@dataclass
class _Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    group: bool = False  # a torch.distributed group was started (and must be destroyed)


def _launched_by_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


def _setup(device: str | None) -> tuple[_Dist, torch.device]:
    from torchgrabcut.api import resolve_device

    d = _Dist()
    if _launched_by_torchrun():
        d.rank, d.world = int(os.environ.get("RANK", "0")), int(os.environ["WORLD_SIZE"])
        d.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device)
    if dev.type == "cuda":
        if _launched_by_torchrun():
            if d.local_rank >= torch.cuda.device_count():
                raise RuntimeError(
                    f"LOCAL_RANK {d.local_rank} but only {torch.cuda.device_count()} CUDA devices; "
                    "start at most one process per GPU"
                )
            dev = torch.device("cuda", d.local_rank)
        elif dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
    if _launched_by_torchrun():
        import torch.distributed as dist

        if dev.type == "cuda":
            dist.init_process_group("nccl", device_id=dev, timeout=GROUP_TIMEOUT)
        else:
            dist.init_process_group("gloo", timeout=GROUP_TIMEOUT)
        d.group = True
    return d, dev


def _gather_shares(d: _Dist, share: OutputShare) -> list[OutputShare]:
    """Every rank's share, on rank 0 (in rank order); [] on the other ranks."""
    if d.world == 1:  # nothing to gather (the collective would still pickle the whole share)
        return [share]
    import torch.distributed as dist

    shares: list[Any] | None = [None] * d.world if d.rank == 0 else None
    dist.gather_object(share, shares, dst=0)  # NCCL: through the rank's current CUDA device
    return [s for s in shares if s is not None] if shares is not None else []


# -- loading -------------------------------------------------------------------------------------


def _identity(x: Any) -> Any:
    return x


class _Images(torch.utils.data.Dataset):
    """Item i: (plan, the decoded image as an (H, W, 3) uint8 tensor or None, error message or None).

    The whole image travels (one shared-memory block per image, not one per
    crop); the main thread cuts the crops as views.
    """

    def __init__(
        self, root: Path, plans: list[ImagePlan], coco: dict[str, Any], margin: float, min_margin: int
    ) -> None:
        self.root, self.plans, self.coco = root, plans, coco
        self.margin, self.min_margin = margin, min_margin

    def __len__(self) -> int:
        return len(self.plans)

    def __getitem__(self, i: int) -> tuple[ImagePlan, torch.Tensor | None, str | None]:
        from torchgrabcut.imageio import read_image

        plan = self.plans[i]
        if not plan.needs_image():
            return plan, None, None  # every annotation skipped: no need to read the image
        try:
            image = read_image(self.root / plan.file_name)
            h, w = image.shape[:2]
            if plan.height is None or plan.width is None:
                replan_with_size(plan, self.coco, h, w, self.margin, self.min_margin)
            elif (h, w) != (plan.height, plan.width):
                raise ValueError(f"{plan.file_name} is {h}x{w} but the annotation file says {plan.height}x{plan.width}")
            return plan, torch.from_numpy(image), None
        except (OSError, ValueError) as err:  # a one-line message, not a worker traceback
            return plan, None, str(err)


# -- post-processing -----------------------------------------------------------------------------


class _Post:
    """The post-processing thread: RLE, IoU, part lines, the rank's output share.

    Errors come back through :meth:`check`.
    """

    def __init__(
        self,
        coco: dict[str, Any],
        writer: PartWriter,
        mask_utils: Any,
        on_chunk: Callable[[int, int], None],
        share: OutputShare,
        keep_gt: bool,
    ) -> None:
        self.coco, self.writer, self.mu, self.on_chunk = coco, writer, mask_utils, on_chunk
        self.share, self.keep_gt = share, keep_gt
        self.queue: queue.Queue[tuple[str, Any] | None] = queue.Queue(maxsize=2 * CHUNK_BATCHES)
        self.error: BaseException | None = None
        self.results: dict[int, dict[int, dict[str, Any]]] = {}
        self.thread = threading.Thread(target=self._loop, name="torchgrabcut-dataset-post", daemon=True)
        self.thread.start()

    def put(self, item: tuple[str, Any] | None) -> None:
        while True:
            self.check()
            try:
                self.queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def check(self) -> None:
        if self.error is not None:
            raise self.error
        if not self.thread.is_alive():
            raise RuntimeError("the post-processing thread stopped")

    def finish(self) -> None:
        self.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error

    def _loop(self) -> None:
        try:
            while True:
                item = self.queue.get()
                if item is None:
                    return
                kind, payload = item
                if kind == "masks":
                    for plan, k, mask in payload:
                        self.results[plan.image][plan.boxes[k].ann] = self._record(plan, k, mask)
                else:
                    self._write_chunk(payload)
        except BaseException as err:  # handed to the main thread
            self.error = err

    def _record(self, plan: ImagePlan, k: int, mask: np.ndarray) -> dict[str, Any]:
        b = plan.boxes[k]
        assert plan.height is not None and plan.width is not None
        full = np.zeros((plan.height, plan.width), dtype=np.uint8, order="F")
        x0, y0, x1, y1 = b.crop
        full[y0:y1, x0:x1] = mask & 1
        rle = self.mu.encode(full)
        rec: dict[str, Any] = {"a": b.ann, "counts": rle["counts"].decode("ascii"), "area": int(self.mu.area(rle))}
        ann = self.coco["annotations"][b.ann]
        try:
            gt = gt_rle(ann.get("segmentation"), plan.height, plan.width, self.mu)
        except ValueError as err:  # malformed ground truth: segmented, not scored (see the module docs)
            rec["gt_error"] = str(err)
            return rec
        if gt is not None:
            rec["iou"] = float(self.mu.iou([rle], [gt], [0])[0][0])
        return rec

    def _write_chunk(self, plans: list[ImagePlan]) -> None:
        lines = []
        boxes = 0
        for plan in plans:
            done = self.results.pop(plan.image, {})
            for a, reason in plan.skipped.items():
                done[a] = {"a": a, "skip": reason}
            boxes += len(plan.boxes)
            assert len(done) == len(plan.anns), "every annotation of a finished image has a record"
            lines.append(
                {"image": plan.image, "size": [plan.height, plan.width], "results": [done[a] for a in plan.anns]}
            )
        self.writer.write(lines)
        for line in lines:  # the output's texts now, while the device works, not in the merge
            self.share.add(self.coco, line, self.keep_gt)
        self.on_chunk(len(plans), boxes)


# -- the job -------------------------------------------------------------------------------------


def _shape_key(crop: tuple[int, int, int, int]) -> tuple[bool, int, int]:
    x0, y0, x1, y1 = crop
    h, w = y1 - y0, x1 - x0
    return h >= w, max(h, w), min(h, w)


def time_covered(spans: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) spans: how long at least one of them ran."""
    covered, reach = 0.0, -math.inf
    for a, b in sorted(spans):
        covered += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    return covered


_Item = tuple[ImagePlan, int, np.ndarray | None]  # an image's plan, a box number, the decoded image


class _Calls:
    """The GrabCut calls of a rank, run on worker threads while the main thread reads on.

    The operators run without the GIL, so while a call computes, the main thread
    gathers and sorts the next chunk and a second call (on CUDA, each worker thread
    has its own stream) packs its crops and unpacks its masks: the device is kept
    busy instead of waiting for the host between calls. (The packing and unpacking
    are one C++ operator call each, see grabcut's list path; as a few tensor
    operations per crop in Python they had kept the calls waiting on the GIL and
    the GPU idle half the time, bench/RESULTS.md.) Results reach the
    post-processing thread in submission order, and a chunk's marker only after
    all of its masks, so the part files are the same as with serial calls.

    On the CPU (``threads`` 0 there) the calls run in the main thread, one after
    another: one call already uses every core, and the operator answers Ctrl-C
    between images only when Python's main thread called it.
    """

    def __init__(
        self, opts: DatasetOptions, dev: torch.device, post: Any, stages: dict[str, float], threads: int = -1
    ) -> None:
        self.opts, self.dev, self.post, self.stages = opts, dev, post, stages
        self.threads = threads if threads >= 0 else (2 if dev.type == "cuda" else 0)
        self.pool = (
            ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="torchgrabcut-dataset-call")
            if self.threads > 0
            else None
        )
        self.local = threading.local()
        self.lock = threading.Lock()
        self.split_batches = False  # a batch was split for want of device memory (said once)
        self.spans: list[tuple[float, float]] = []  # (start, end) of each call on a worker thread
        # Submitted calls (future, items) and chunk markers (None, plans), oldest first.
        self.pending: deque[tuple[Future[list[np.ndarray]] | None, Any]] = deque()

    def _run(self, crops: list[np.ndarray], boxes: list[tuple[int, int, int, int]]) -> list[np.ndarray]:
        if self.dev.type != "cuda":
            return self._run_fitting(crops, boxes)
        stream = getattr(self.local, "stream", None)
        if stream is None:
            torch.cuda.set_device(self.dev)  # the current device is per thread
            stream = self.local.stream = torch.cuda.Stream(self.dev)
        t = time.perf_counter()
        with torch.cuda.stream(stream):
            masks = self._run_fitting(crops, boxes)
        with self.lock:
            self.spans.append((t, time.perf_counter()))
        return masks

    def timeline(self, t_begin: float, t_end: float) -> dict[str, float]:
        """Where the calls fell between t_begin and t_end (seconds): before the first, while at
        least one ran, the calls' own seconds summed over threads, and after the last."""
        if not self.spans:
            return {}
        return {
            "before_calls": min(a for a, _ in self.spans) - t_begin,
            "calls_running": time_covered(self.spans),
            "in_calls": sum(b - a for a, b in self.spans),
            "after_calls": t_end - max(b for _, b in self.spans),
        }

    def _run_fitting(self, crops: list[np.ndarray], boxes: list[tuple[int, int, int, int]]) -> list[np.ndarray]:
        """One call; a batch the device has no memory for is split in halves and retried.

        A crop's mask does not depend on the other crops of its call, so the output is
        the same. A failed call leaves nothing allocated (see grabcut), and the other
        worker's call may have been what filled the device.
        """
        from torchgrabcut.api import grabcut

        try:
            return grabcut(crops, box=boxes, max_iter=self.opts.max_iter, device=self.dev)
        except torch.OutOfMemoryError:
            if len(crops) == 1:
                raise
        with self.lock:
            first_split = not self.split_batches
            self.split_batches = True
        if first_split and not self.opts.quiet:
            print(
                f"dataset: a batch of {len(crops)} crops did not fit in the device's memory; splitting such "
                "batches (a smaller --batch-size avoids the retries)",
                file=sys.stderr,
                flush=True,
            )
        half = len(crops) // 2
        return self._run_fitting(crops[:half], boxes[:half]) + self._run_fitting(crops[half:], boxes[half:])

    def submit(self, batch: list[_Item]) -> None:
        """Starts a call on the batch (without workers: makes it); first waits while every worker has one."""
        while self.pool is not None and sum(f is not None for f, _ in self.pending) >= self.threads:
            self._hand_on(block=True)
        crops = []
        for plan, k, image in batch:
            x0, y0, x1, y1 = plan.boxes[k].crop
            assert image is not None, "an image with boxes to segment was read"
            crops.append(image[y0:y1, x0:x1])
        boxes = [plan.boxes[k].box for plan, k, _ in batch]
        if self.pool is not None:
            future = self.pool.submit(self._run, crops, boxes)
        else:
            future = Future()
            t = time.perf_counter()
            future.set_result(self._run(crops, boxes))
            self.stages["wait_calls"] += time.perf_counter() - t
        self.pending.append((future, batch))
        self._hand_on(block=False)

    def end_chunk(self, plans: list[ImagePlan]) -> None:
        self.pending.append((None, plans))
        self._hand_on(block=False)

    def _hand_on(self, block: bool) -> None:
        """Passes finished calls and due chunk markers to post; with block, at least one call."""
        while self.pending:
            future, payload = self.pending[0]
            if future is None:
                self.pending.popleft()
                self._put(("chunk", payload))
                continue
            if not future.done():
                if not block:
                    return
                t = time.perf_counter()
                future.result()
                self.stages["wait_calls"] += time.perf_counter() - t
            self.pending.popleft()
            masks = future.result()
            self._put(("masks", [(plan, k, m) for (plan, k, _), m in zip(payload, masks)]))
            block = False

    def _put(self, item: tuple[str, Any]) -> None:
        t = time.perf_counter()
        self.post.put(item)
        self.stages["wait_post"] += time.perf_counter() - t

    def finish(self) -> None:
        """Waits for every call and hands everything on."""
        while self.pending:
            self._hand_on(block=True)
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def abandon(self) -> None:
        """After an error: drops the calls not started, waits for the running ones."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _process(
    plans: list[ImagePlan],
    opts: DatasetOptions,
    coco: dict[str, Any],
    dev: torch.device,
    post: _Post,
) -> dict[str, float]:
    """Runs the rank's images through the pipeline; returns the main thread's seconds per stage."""
    data = _Images(Path(opts.images), plans, coco, opts.margin, opts.min_margin)
    loader = torch.utils.data.DataLoader(
        data,
        batch_size=None,
        shuffle=False,
        num_workers=opts.workers,
        collate_fn=_identity,
        prefetch_factor=8 if opts.workers > 0 else None,
    )
    # The first chunk is one batch, so the device starts after a batch's images are read
    # rather than a whole chunk's; later ones are CHUNK_BATCHES batches.
    chunk_boxes = opts.batch_size
    chunk: list[tuple[ImagePlan, np.ndarray | None]] = []
    n_boxes = 0
    stages = {"wait_images": 0.0, "wait_calls": 0.0, "wait_post": 0.0}
    calls = _Calls(opts, dev, post, stages)

    def flush() -> None:
        items = [(plan, k, image) for plan, image in chunk for k in range(len(plan.boxes))]
        items.sort(key=lambda it: _shape_key(it[0].boxes[it[1]].crop))  # stable: ties keep file order
        for s in range(0, len(items), opts.batch_size):
            calls.submit(items[s : s + opts.batch_size])
        calls.end_chunk([plan for plan, _ in chunk])

    t_begin = time.perf_counter()
    try:
        it = iter(loader)
        while True:
            t = time.perf_counter()
            item = next(it, None)
            stages["wait_images"] += time.perf_counter() - t
            if item is None:
                break
            plan, image, error = item
            if error is not None:
                raise ValueError(error)
            post.results[plan.image] = {}
            chunk.append((plan, None if image is None else image.numpy()))
            n_boxes += len(plan.boxes)
            if n_boxes >= chunk_boxes:
                flush()
                chunk, n_boxes = [], 0
                chunk_boxes = opts.batch_size * CHUNK_BATCHES
        if chunk:
            flush()
        calls.finish()
    except BaseException:
        calls.abandon()
        raise
    stages.update(calls.timeline(t_begin, time.perf_counter()))
    return stages


def run_dataset(opts: DatasetOptions) -> DatasetSummary | None:
    """Runs the job; the summary on rank 0 (or without torchrun), None on the other ranks."""
    mask_utils, tqdm = require_dataset_deps()
    _check_options(opts)
    t0 = time.perf_counter()
    d, dev = _setup(opts.device)
    frozen_by_caller = gc.get_freeze_count() > 0  # then _run's freeze is left as it is
    try:
        return _run(opts, d, dev, (t0, time.perf_counter()), mask_utils, tqdm)
    finally:
        if not frozen_by_caller:
            gc.unfreeze()
        if d.group:
            import torch.distributed as dist

            dist.destroy_process_group()


def _run(
    opts: DatasetOptions, d: _Dist, dev: torch.device, t_setup: tuple[float, float], mask_utils: Any, tqdm: Any
) -> DatasetSummary | None:
    t0, t_read = t_setup  # the run's start, the end of _setup
    coco, digest = load_coco(opts.coco)
    # The input's millions of objects live for the whole run: moved out of the cyclic
    # collector's reach, its passes stop scanning them (they halved the planning time of
    # 10000 images; run_dataset undoes it), and DataLoader workers forked later do not copy
    # their pages by touching them.
    gc.freeze()
    plans = index_images(coco)
    out = Path(opts.out)
    pdir = parts_dir(out)
    done = read_parts(pdir)  # an earlier run's, used only once its settings are checked below
    # The images still to do are shared out, not the whole list: after an uneven stop (a
    # rank that finished its half, one that did not) every rank still gets an equal share,
    # and none waits in the gather for hours (NCCL's watchdog ends a wait after minutes).
    todo = [p for p in plans if p.image not in done][d.rank :: d.world]
    for p in todo:  # its share only: planning is one of the steps more processes would not shorten
        plan_boxes(p, coco, opts.margin, opts.min_margin)
    missing = [p.file_name for p in todo if p.needs_image() and not (Path(opts.images) / p.file_name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"--images: {len(missing)} image files missing under {opts.images} (first: {missing[0]})"
        )
    # After the checks of the input: a run that cannot start leaves no parts folder behind.
    # A folder without a finished image (a run that failed before its first chunk) holds
    # nothing to resume, so other settings (a corrected input) simply replace its record.
    created = not pdir.exists()
    check_run_config(
        pdir,
        {"input_sha256": digest, "margin": opts.margin, "min_margin": opts.min_margin, "max_iter": opts.max_iter},
        replace=not done,
    )
    if d.rank == 0 and not opts.quiet:
        n_done = sum(1 for p in plans if p.image in done)
        print(
            f"dataset: {len(plans)} images with annotations, {n_done} already done; "
            f"{d.world} process{'es' if d.world > 1 else ''} on {dev}",
            flush=True,
        )

    writer = PartWriter(pdir / f"rank{d.rank}.jsonl")
    bar = tqdm(total=len(todo), unit="img", disable=opts.quiet or d.rank != 0, dynamic_ncols=True)
    counts = {"images": 0, "boxes": 0, "chunks": 0}
    exit_after = int(os.environ.get(EXIT_AFTER_ENV, "0") or 0)
    block_after = int(os.environ.get(BLOCK_AFTER_ENV, "0") or 0)
    t_start = time.perf_counter()

    def on_chunk(images: int, boxes: int) -> None:
        counts["images"] += images
        counts["boxes"] += boxes
        counts["chunks"] += 1
        bar.update(images)
        bar.set_postfix_str(f"{counts['boxes'] / max(time.perf_counter() - t_start, 1e-9):.0f} boxes/s", refresh=False)
        if exit_after and counts["chunks"] >= exit_after:
            os._exit(3)  # the test hook: stop as a kill would
        if block_after and counts["chunks"] >= block_after:
            threading.Event().wait()  # the test hook: the run cannot finish until it is interrupted

    share = OutputShare()
    post = _Post(coco, writer, mask_utils, on_chunk, share, opts.keep_gt)
    try:
        stages = _process(todo, opts, coco, dev, post)
        t = time.perf_counter()
        post.finish()
        stages["wait_post"] += time.perf_counter() - t
    except BaseException:
        if created and d.world == 1 and not writer.wrote:
            writer.close()
            remove_parts(pdir)  # failed before its first chunk: nothing to resume, nothing left behind
        raise
    finally:
        bar.close()
        writer.close()
    for p in [p for p in plans if p.image in done][d.rank :: d.world]:  # its share of earlier runs' images
        share.add(coco, done[p.image], opts.keep_gt)
    share.run_images, share.run_boxes = counts["images"], counts["boxes"]
    t_segmented = time.perf_counter()
    shares = _gather_shares(d, share)
    if d.rank != 0:
        return None
    t_merge = time.perf_counter()
    write_output(out, coco, shares, [p.image for p in plans])
    if not opts.keep_parts:
        remove_parts(pdir)
    summary = _summarise(out, plans, shares)
    if summary.gt_errors:  # printed even with --quiet: the mean IoU leaves these annotations out
        print(f"dataset: {summary.gt_warning()}", file=sys.stderr, flush=True)
    t_end = time.perf_counter()
    summary.seconds = t_end - t0
    ends = (t_read, t_start, t_segmented, t_merge, t_end)
    summary.phases = {name: b - a for name, a, b in zip(PHASES, (t0, *ends), ends)}
    summary.world_size, summary.device = d.world, str(dev)
    summary.stages = stages
    return summary


def _summarise(out: Path, plans: list[ImagePlan], shares: list[OutputShare]) -> DatasetSummary:
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
    # fsum is exact, so the mean does not depend on how the images were shared out
    s.iou_mean = math.fsum(ious) / len(ious) if ious else None
    return s
