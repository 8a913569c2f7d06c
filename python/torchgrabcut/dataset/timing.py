"""Where a dataset run's time goes: the phases of its wall time, and what the main thread waited for.

Only "segmenting" shrinks with more processes; the other phases bound what more
GPUs can gain, which is why the summary prints them (rank 0's clock).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PHASES", "PhaseClock", "call_timeline", "time_covered", "waited"]

# The phases of a run's wall time, on rank 0: joining the group and starting CUDA, reading
# and planning the input, its own share of the boxes, waiting for (and gathering from) the
# other processes, writing the output and the summary.
PHASES = ("set-up", "reading the input", "segmenting", "waiting for other processes", "merge")


class PhaseClock:
    """Marks the end of each phase of :data:`PHASES`; started when made."""

    def __init__(self) -> None:
        self.marks = [time.perf_counter()]

    def end_phase(self) -> None:
        self.marks.append(time.perf_counter())

    def seconds(self) -> float:
        """From the start to the last mark."""
        return self.marks[-1] - self.marks[0]

    def phases(self) -> dict[str, float]:
        """Seconds per phase, in order; they add up to :meth:`seconds`."""
        return {name: b - a for name, a, b in zip(PHASES, self.marks, self.marks[1:])}


@contextmanager
def waited(stages: dict[str, float], stage: str) -> Iterator[None]:
    """Adds the seconds the block took to ``stages[stage]`` (not when it raises: the run is over then)."""
    t = time.perf_counter()
    yield
    stages[stage] += time.perf_counter() - t


def time_covered(spans: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) spans: how long at least one of them ran."""
    covered, reach = 0.0, -math.inf
    for a, b in sorted(spans):
        covered += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    return covered


def call_timeline(spans: list[tuple[float, float]], t_begin: float, t_end: float) -> dict[str, float]:
    """Where the calls' (start, end) spans fell between t_begin and t_end (seconds): before the
    first, while at least one ran, the calls' own seconds summed over threads, and after the last."""
    if not spans:
        return {}
    return {
        "before_calls": min(a for a, _ in spans) - t_begin,
        "calls_running": time_covered(spans),
        "in_calls": sum(b - a for a, b in spans),
        "after_calls": t_end - max(b for _, b in spans),
    }
