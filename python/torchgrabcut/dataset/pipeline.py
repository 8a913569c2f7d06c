"""A rank's images through GrabCut: read, batch, segment, post-process, write.

1. DataLoader workers (``workers`` processes, torch's own) read the rank's
   images with Pillow (:class:`ImageReader`); each decoded image travels as one
   tensor in shared memory, and the main thread cuts a crop per box from it
   (see :mod:`.plan`). The workers also check and convert each box's ground
   truth (:func:`ground_truths`), work the post-processing thread would
   otherwise do one box at a time.
2. The main thread gathers whole images into a chunk of about
   ``CHUNK_BATCHES * batch_size`` boxes, sorts the chunk's crops by shape
   (:func:`crop_shape_key`) so that crops of like size share a padded batch, and
   calls :func:`torchgrabcut.grabcut` on ``batch_size`` crops at a time
   (:mod:`.calls`). A crop's mask does not depend on the other crops of its call,
   so the sort changes the speed, never the result.
3. A post-processing thread (:class:`PostProcessor`) pastes each crop's
   foreground into an empty mask of the image's size, encodes it as COCO RLE
   (pycocotools), computes the IoU with the annotation's ground truth when it
   has one, and when a chunk is complete appends its images
   to the rank's part file (flushed and fsynced, see :mod:`.parts`) and their
   annotations' output texts to the rank's :class:`~.parts.OutputShare`. It
   overlaps the next chunk's GPU work.

Malformed ground truth (a segmentation that :func:`~.plan.segmentation_error`
refuses) never reaches pycocotools: the box is segmented as usual, the
annotation gets ``grabcut_gt_error`` (the reason) instead of ``grabcut_iou``.

An image that cannot be read goes through the chunk like the others, with no box to
segment: its line holds ``"error"`` (the reason) and a ``{"a": j, "error": ...}``
record for each annotation its plan would have segmented (see :mod:`.parts`).
Unless ``strict``: then the first such image stops the run.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchgrabcut.dataset.calls import GrabCutCalls
from torchgrabcut.dataset.options import DatasetOptions
from torchgrabcut.dataset.parts import OutputShare, PartWriter
from torchgrabcut.dataset.plan import ImagePlan, gt_rle, replan_with_size
from torchgrabcut.dataset.timing import waited
from torchgrabcut.imageio import read_image

__all__ = ["CHUNK_BATCHES", "ImageReader", "PostProcessor", "crop_shape_key", "ground_truths", "segment_share"]

CHUNK_BATCHES = 4  # a chunk (the unit of sorting and of durable progress) is this many batches of boxes


def _identity(x: Any) -> Any:
    return x


# A box's ground truth as the post-processing thread scores against it: a compressed RLE,
# None (the annotation has no segmentation), or why its segmentation cannot be used.
Truth = dict[str, Any] | str | None


def ground_truths(plan: ImagePlan, coco: dict[str, Any]) -> dict[int, Truth]:
    """Each box's ground truth (annotation index -> :data:`Truth`) on the image of ``plan``'s size.

    Malformed ground truth (a segmentation :func:`~.plan.segmentation_error` refuses)
    gives the reason instead: the box is segmented, not scored.
    """
    if not plan.boxes:
        return {}
    from pycocotools import mask as mask_utils  # the job requires it before it starts (require_dataset_deps)

    assert plan.height is not None and plan.width is not None
    truths: dict[int, Truth] = {}
    for b in plan.boxes:
        try:
            truths[b.ann] = gt_rle(coco["annotations"][b.ann].get("segmentation"), plan.height, plan.width, mask_utils)
        except ValueError as err:
            truths[b.ann] = str(err)
    return truths


class ImageReader(torch.utils.data.Dataset):
    """Item i: (plan, the decoded image as an (H, W, 3) uint8 tensor or None, error message or None,
    the boxes' :func:`ground_truths`).

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

    def __getitem__(self, i: int) -> tuple[ImagePlan, torch.Tensor | None, str | None, dict[int, Truth]]:
        plan = self.plans[i]
        if not plan.needs_image():
            return plan, None, None, {}  # every annotation skipped: no need to read the image
        path = self.root / plan.file_name
        try:
            image = read_image(path)
            h, w = image.shape[:2]
            if plan.height is None or plan.width is None:
                replan_with_size(plan, self.coco, h, w, self.margin, self.min_margin)
            elif (h, w) != (plan.height, plan.width):
                raise ValueError(f"{plan.file_name} is {h}x{w} but the annotation file says {plan.height}x{plan.width}")
        except (OSError, ValueError) as err:  # a one-line message, not a worker traceback
            return plan, None, _reason(str(err), str(path), plan.file_name), {}
        return plan, torch.from_numpy(image), None, ground_truths(plan, self.coco)


def _reason(message: str, path: str, file_name: str) -> str:
    """A read error as the output keeps it: the image named by its ``file_name``.

    Where --images lies on this machine is no part of the dataset (the output would
    differ with the folder's spelling); a path that is not UTF-8 would hold surrogates,
    which the output cannot be written with.
    """
    return message.replace(path, file_name).encode("utf-8", "backslashreplace").decode("utf-8")


class PostProcessor:
    """The post-processing thread: RLE, IoU, part lines, the rank's output share.

    It takes ``("masks", [(plan, k, mask), ...])`` and ``("chunk", plans)`` items
    through :meth:`put`; after writing a chunk it calls ``on_chunk(images, boxes)``.
    Its errors come back to the main thread through :meth:`check`.
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
        # image index -> its boxes' ground truths (set by the main thread, used up by this one)
        self.truths: dict[int, dict[int, Truth]] = {}
        self.unreadable: dict[int, str] = {}  # image index -> why it could not be read
        self.thread = threading.Thread(target=self._loop, name="torchgrabcut-dataset-post", daemon=True)
        self.thread.start()

    def put(self, item: tuple[str, Any] | None) -> None:
        # A short timeout, so that an error of the thread reaches the main thread
        # instead of leaving it waiting on a full queue.
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
        gt = self.truths[plan.image].pop(b.ann)
        if isinstance(gt, str):  # malformed ground truth: segmented, not scored (see the module docs)
            rec["gt_error"] = gt
        elif gt is not None:
            rec["iou"] = float(self.mu.iou([rle], [gt], [0])[0][0])
        return rec

    def image_unreadable(self, plan: ImagePlan, reason: str) -> None:
        """Main thread: the image could not be read; its annotations to segment get the reason."""
        plan.boxes = []  # the sizes in the file may have planned some: none is segmented
        self.unreadable[plan.image] = reason
        self.results[plan.image] = {a: {"a": a, "error": reason} for a in plan.anns if a not in plan.skipped}

    def _write_chunk(self, plans: list[ImagePlan]) -> None:
        lines = []
        boxes = 0
        for plan in plans:
            done = self.results.pop(plan.image, {})
            self.truths.pop(plan.image, None)
            for a, reason in plan.skipped.items():
                done[a] = {"a": a, "skip": reason}
            boxes += len(plan.boxes)
            assert len(done) == len(plan.anns), "every annotation of a finished image has a record"
            line: dict[str, Any] = {"image": plan.image, "size": [plan.height, plan.width]}
            if plan.image in self.unreadable:  # its size is not known, or not what the file says
                line = {"image": plan.image, "size": None, "error": self.unreadable.pop(plan.image)}
            line["results"] = [done[a] for a in plan.anns]
            lines.append(line)
        self.writer.write(lines)
        for line in lines:  # the output's texts now, while the device works, not in the merge
            self.share.add(self.coco, line, self.keep_gt)
        self.on_chunk(len(plans), boxes)


def crop_shape_key(crop: tuple[int, int, int, int]) -> tuple[bool, int, int]:
    """Orientation, then the longer side, then the shorter: crops of like size end up side by side."""
    x0, y0, x1, y1 = crop
    h, w = y1 - y0, x1 - x0
    return h >= w, max(h, w), min(h, w)


def _admit(post: PostProcessor, plan: ImagePlan, error: str | None, truths: dict[int, Truth], strict: bool) -> None:
    """An image read (or not) enters its chunk; one that could not be read stops the run when ``strict``."""
    if error is None:
        post.results[plan.image] = {}
        post.truths[plan.image] = truths
    elif strict:
        raise ValueError(error)
    else:
        post.image_unreadable(plan, error)


def segment_share(
    plans: list[ImagePlan],
    opts: DatasetOptions,
    coco: dict[str, Any],
    dev: torch.device,
    post: PostProcessor,
) -> dict[str, float]:
    """Runs the rank's images through the pipeline; returns the main thread's seconds per stage."""
    data = ImageReader(Path(opts.images), plans, coco, opts.margin, opts.min_margin)
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
    calls = GrabCutCalls(opts, dev, post, stages)

    def submit_chunk() -> None:
        items = [(plan, k, image) for plan, image in chunk for k in range(len(plan.boxes))]
        items.sort(key=lambda it: crop_shape_key(it[0].boxes[it[1]].crop))  # stable: ties keep file order
        for s in range(0, len(items), opts.batch_size):
            calls.submit(items[s : s + opts.batch_size])
        calls.end_chunk([plan for plan, _ in chunk])

    t_begin = time.perf_counter()
    try:
        images = iter(loader)
        while True:
            with waited(stages, "wait_images"):
                item = next(images, None)
            if item is None:
                break
            plan, image, error, truths = item
            _admit(post, plan, error, truths, opts.strict)
            chunk.append((plan, None if image is None else image.numpy()))
            n_boxes += len(plan.boxes)
            if n_boxes >= chunk_boxes:
                submit_chunk()
                chunk, n_boxes = [], 0
                chunk_boxes = opts.batch_size * CHUNK_BATCHES
        if chunk:
            submit_chunk()
        calls.finish()
    except BaseException:
        calls.abandon()
        raise
    stages.update(calls.timeline(t_begin, time.perf_counter()))
    return stages
