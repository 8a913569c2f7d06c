"""The dataset job on a torchrun group: joining it, sharing out the images, gathering the output.

When launched by ``torchrun`` (``WORLD_SIZE`` and ``MASTER_ADDR`` set, one
process or more) the job joins a ``torch.distributed`` group: NCCL when
computing on CUDA, each rank on ``cuda:LOCAL_RANK``; gloo on the CPU. Rank
``r`` of ``n`` takes items ``r, r + n, ...`` of a list (:func:`rank_share`), and
the group's one collective gathers every rank's output share on rank 0. No pool
or scheduler of our own: torchrun starts the processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from torchgrabcut.dataset.parts import OutputShare
from torchgrabcut.device import resolve_device

__all__ = [
    "GROUP_TIMEOUT",
    "Rank",
    "broadcast_from_rank0",
    "gather_shares",
    "join_group",
    "launched_by_torchrun",
    "leave_group",
    "rank_share",
]

# The group's one collective (gathering the output shares) waits for the slowest process;
# NCCL's default watchdog (10 minutes) would end a long job whose processes finish
# further apart than that, so the wait may last as long as a day.
GROUP_TIMEOUT = timedelta(hours=24)

T = TypeVar("T")


@dataclass
class Rank:
    """This process's place in the group (rank 0 of 1 without torchrun)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    joined_group: bool = False  # a torch.distributed group was started (and must be destroyed)


def launched_by_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


def join_group(device: str | None) -> tuple[Rank, torch.device]:
    """This process's rank and device; under torchrun, after joining the group."""
    r = Rank()
    if launched_by_torchrun():
        r.rank, r.world = int(os.environ.get("RANK", "0")), int(os.environ["WORLD_SIZE"])
        r.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device)
    if dev.type == "cuda":
        if launched_by_torchrun():
            if r.local_rank >= torch.cuda.device_count():
                raise RuntimeError(
                    f"LOCAL_RANK {r.local_rank} but only {torch.cuda.device_count()} CUDA devices; "
                    "start at most one process per GPU"
                )
            dev = torch.device("cuda", r.local_rank)
        elif dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
    if launched_by_torchrun():
        if dev.type == "cuda":
            dist.init_process_group("nccl", device_id=dev, timeout=GROUP_TIMEOUT)
        else:
            dist.init_process_group("gloo", timeout=GROUP_TIMEOUT)
        r.joined_group = True
    return r, dev


def leave_group(r: Rank) -> None:
    if r.joined_group:
        dist.destroy_process_group()


def rank_share(items: list[T], r: Rank) -> list[T]:
    """The rank's items: number ``rank, rank + world, ...``."""
    return items[r.rank :: r.world]


def broadcast_from_rank0(r: Rank, value: T) -> T:
    """Rank 0's ``value`` on every rank (a small picklable object); the value itself without a group."""
    if r.world == 1:
        return value
    box: list[Any] = [value]
    dist.broadcast_object_list(box, src=0)  # NCCL: through the rank's current CUDA device
    result: T = box[0]
    return result


def gather_shares(r: Rank, share: OutputShare) -> list[OutputShare]:
    """Every rank's share, on rank 0 (in rank order); [] on the other ranks."""
    if r.world == 1:  # nothing to gather (the collective would still pickle the whole share)
        return [share]
    shares: list[Any] | None = [None] * r.world if r.rank == 0 else None
    dist.gather_object(share, shares, dst=0)  # NCCL: through the rank's current CUDA device
    return [s for s in shares if s is not None] if shares is not None else []
