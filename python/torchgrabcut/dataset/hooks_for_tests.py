"""Environment variables that make a dataset run stop or hold after a chunk, for the tests only.

They are left out of ``--help``: they exist so that tests can interrupt a run at a
known, durable point however fast or busy the machine is.

- ``TORCHGRABCUT_DATASET_EXIT_AFTER=k``: once ``k`` chunks are written the
  process exits at once (``os._exit(3)``: no cleanup, as a kill would leave it),
  for the resume tests.
- ``TORCHGRABCUT_DATASET_BLOCK_AFTER=k``: once ``k`` chunks are written the
  post-processing thread waits forever, so the run cannot finish until it is
  interrupted, for the Ctrl-C test.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

__all__ = ["BLOCK_AFTER_ENV", "EXIT_AFTER_ENV", "ChunkTestHooks"]

EXIT_AFTER_ENV = "TORCHGRABCUT_DATASET_EXIT_AFTER"
BLOCK_AFTER_ENV = "TORCHGRABCUT_DATASET_BLOCK_AFTER"


@dataclass(frozen=True)
class ChunkTestHooks:
    exit_after: int = 0  # chunks; 0: never
    block_after: int = 0

    @classmethod
    def from_env(cls) -> ChunkTestHooks:
        return cls(
            exit_after=int(os.environ.get(EXIT_AFTER_ENV, "0") or 0),
            block_after=int(os.environ.get(BLOCK_AFTER_ENV, "0") or 0),
        )

    def after_chunk(self, chunks_written: int) -> None:
        """Called by the post-processing thread once a chunk is durable."""
        if self.exit_after and chunks_written >= self.exit_after:
            os._exit(3)
        if self.block_after and chunks_written >= self.block_after:
            threading.Event().wait()
