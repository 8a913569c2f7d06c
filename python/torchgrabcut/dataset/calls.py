"""The GrabCut calls of a rank, run on worker threads while the main thread reads on.

The operators run without the GIL, so while a call computes, the main thread
gathers and sorts the next chunk and a second call (on CUDA, each worker thread
has its own stream) packs its crops and unpacks its masks: the device is kept
busy instead of waiting for the host between calls. Results reach the
post-processing thread in submission order, and a chunk's marker only after all
of its masks, so the part files are the same as with serial calls.

On the CPU (no worker threads there) the calls run in the main thread, one after
another: one call already uses every core, and the operator answers Ctrl-C
between images only when Python's main thread called it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from torchgrabcut import api
from torchgrabcut.dataset.options import DatasetOptions
from torchgrabcut.dataset.plan import ImagePlan
from torchgrabcut.dataset.timing import call_timeline, waited

__all__ = ["BoxItem", "GrabCutCalls"]

BoxItem = tuple[ImagePlan, int, np.ndarray | None]  # an image's plan, a box number, the decoded image


class GrabCutCalls:
    """Submits batches of boxes as GrabCut calls and hands their masks to ``post`` in order.

    ``post`` needs only ``put(("masks", [(plan, k, mask), ...]))`` and
    ``put(("chunk", plans))``; ``stages`` gets the main thread's seconds waiting
    for calls ("wait_calls") and for post ("wait_post").
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
        """One batch, on the calling thread (on CUDA: on that thread's own stream)."""
        if self.dev.type != "cuda":
            return self.segment_halving_on_oom(crops, boxes)
        stream = getattr(self.local, "stream", None)
        if stream is None:
            torch.cuda.set_device(self.dev)  # the current device is per thread
            stream = self.local.stream = torch.cuda.Stream(self.dev)
        t = time.perf_counter()
        with torch.cuda.stream(stream):
            masks = self.segment_halving_on_oom(crops, boxes)
        with self.lock:
            self.spans.append((t, time.perf_counter()))
        return masks

    def timeline(self, t_begin: float, t_end: float) -> dict[str, float]:
        """Where the calls fell between t_begin and t_end: see :func:`~.timing.call_timeline`."""
        return call_timeline(self.spans, t_begin, t_end)

    def segment_halving_on_oom(
        self, crops: list[np.ndarray], boxes: list[tuple[int, int, int, int]]
    ) -> list[np.ndarray]:
        """One call; a batch the device has no memory for is split in halves and retried.

        A crop's mask does not depend on the other crops of its call, so the output is
        the same. A failed call leaves nothing allocated (see grabcut), and the other
        worker's call may have been what filled the device.
        """
        try:  # api.grabcut looked up at each call: a benchmark may stand in for it
            return api.grabcut(crops, box=boxes, max_iter=self.opts.max_iter, device=self.dev)
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
        return self.segment_halving_on_oom(crops[:half], boxes[:half]) + self.segment_halving_on_oom(
            crops[half:], boxes[half:]
        )

    def submit(self, batch: list[BoxItem]) -> None:
        """Starts a call on the batch (without workers: makes it); first waits while every worker has one."""
        while self.pool is not None and sum(f is not None for f, _ in self.pending) >= self.threads:
            self._pass_finished_to_post(wait_for_one=True)
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
            with waited(self.stages, "wait_calls"):
                future.set_result(self._run(crops, boxes))
        self.pending.append((future, batch))
        self._pass_finished_to_post(wait_for_one=False)

    def end_chunk(self, plans: list[ImagePlan]) -> None:
        """Marks the chunk complete: post gets its plans once every mask submitted before is through."""
        self.pending.append((None, plans))
        self._pass_finished_to_post(wait_for_one=False)

    def _pass_finished_to_post(self, wait_for_one: bool) -> None:
        """Passes finished calls and due chunk markers to post, oldest first; stops at the first
        call still running, unless wait_for_one and no call has been passed yet."""
        while self.pending:
            future, payload = self.pending[0]
            if future is None:
                self.pending.popleft()
                self._put(("chunk", payload))
                continue
            if not future.done():
                if not wait_for_one:
                    return
                with waited(self.stages, "wait_calls"):
                    future.result()
            self.pending.popleft()
            masks = future.result()
            self._put(("masks", [(plan, k, m) for (plan, k, _), m in zip(payload, masks)]))
            wait_for_one = False

    def _put(self, item: tuple[str, Any]) -> None:
        with waited(self.stages, "wait_post"):
            self.post.put(item)

    def finish(self) -> None:
        """Waits for every call and hands everything on."""
        while self.pending:
            self._pass_finished_to_post(wait_for_one=True)
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def abandon(self) -> None:
        """After an error: drops the calls not started, waits for the running ones."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
