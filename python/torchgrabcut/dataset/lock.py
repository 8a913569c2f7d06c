"""One dataset job per output: an exclusive ``flock`` on ``FILE.lock`` next to the output ``FILE``.

Two jobs on one output would each read the same finished images, then both do every
image left (and append to the same part files). The second job is refused at start
instead, with one line. The lock is the kernel's: a job that is killed holds it no
longer, and the file it leaves behind blocks nobody (the next job locks it and, at
its end, removes it).

Under torchrun the job's rank 0 takes the lock and tells the other ranks (see
:func:`torchgrabcut.dataset.distributed.broadcast_from_rank0`); they take none, since
every rank of a job holds the same output.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["OutputLock", "lock_path"]

# Descriptors of the locks this process holds. A forked child (a DataLoader worker)
# inherits them, and a flock lasts while any descriptor of it is open: a worker left
# behind by a killed job would keep the next job out. The child closes its copies
# (closing does not unlock: the parent's descriptor still holds the lock).
_HELD: set[int] = set()


def _close_in_child() -> None:
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


def lock_path(out: Path) -> Path:
    return out.with_name(out.name + ".lock")


class OutputLock:
    """The lock of one output file; :meth:`acquire` refuses with RuntimeError while another job holds it."""

    def __init__(self, out: Path) -> None:
        self.out, self.path = out, lock_path(out)
        self._fd: int | None = None

    def acquire(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                os.close(fd)
                by = f" (process {holder})" if holder.isdigit() else ""
                raise RuntimeError(
                    f"--output: another dataset job is writing {self.out}{by}; wait for it to end or stop it "
                    f"(two jobs on one output would both do every image; it holds {self.path})"
                ) from None
            # The job before may have removed the file between our open and our lock:
            # then ours is a lock on a file that no later job will open. Open it again.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # for the refusal's message
        self._fd = fd
        _HELD.add(fd)

    def release(self) -> None:
        """Removes the file, then unlocks: a job waiting to open it opens a new one (see acquire)."""
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        _HELD.discard(self._fd)
        os.close(self._fd)
        self._fd = None
