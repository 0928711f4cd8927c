"""Where each rank's part of a checkpoint goes when a manager runs on several ranks, and how a checkpoint made by
several ranks reads back in one process.

Why a layout of its own: on N ranks every rank writes its own part (``<checkpoint>/rank_<r>/``, its complete marker
last); the checkpoint is complete only when every rank's part is, and a resume in a process with no process group
(a restarted job's rank 0, a test) reads every part back into one state. One rank keeps the one-directory layout
(``<checkpoint>/`` itself), so a one-rank checkpoint reads as before.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

_PART = re.compile(r"rank_(\d+)$")


def world() -> tuple[int, int]:
    """(rank, world size) of this process: its process group's, or (0, 1) when there is none."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def part(path: str, rank: int, world_size: int) -> str:
    """The directory rank ``rank`` writes its part of the checkpoint at ``path`` into."""
    return os.path.join(path, f"rank_{rank}") if world_size > 1 else path


def parts(path: str) -> list[str]:
    """The rank parts of the checkpoint at ``path`` in rank order; ``[path]`` for a one-rank checkpoint."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return [path]
    ranks = sorted(int(m.group(1)) for m in map(_PART.match, names) if m)
    return [os.path.join(path, f"rank_{r}") for r in ranks] or [path]


def load_parts(path: str, load_one: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """Every part of the checkpoint at ``path`` read with ``load_one`` and merged (each rank's keys are its own;
    a key every rank saved, such as the step, must agree)."""
    merged: dict[str, Any] = {}
    for where in parts(path):
        loaded = load_one(where)
        for key, value in loaded.items():
            if key in merged and not isinstance(value, dict) and merged[key] != value:
                raise ValueError(f"{where}: {key} is {value!r}, another rank saved {merged[key]!r}")
            merged[key] = {**merged[key], **value} if isinstance(value, dict) and key in merged else value
    return merged


def all_agree(ok: bool, world_size: int) -> bool:
    """Whether every rank says ``ok`` (a collective of every rank's main thread; no collective on one rank)."""
    if world_size == 1:
        return ok
    import torch.distributed as dist

    said: list[Any] = [None] * world_size
    dist.all_gather_object(said, bool(ok))
    return all(said)


def barrier(world_size: int) -> None:
    if world_size > 1:
        import torch.distributed as dist

        dist.barrier()
