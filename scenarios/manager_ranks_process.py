"""The manager scenario on two ranks with DCP's process-based ``async_save`` as the saver (``manager-ranks-process``):
``manager-ranks``' saves, where each rank's manager hands its part to DCP's checkpoint daemon, a grandchild of the
run (``P3 (child of P1)``) whose pipe traffic and file writes are scheduling points.

Why a cell of its own: issue 48's invariant adds "no process leaks" and "one daemon per process however fast saves
come" for this saver, and its two-rank bug (NVIDIA-NeMo/Automodel#3824: one rank already sees its daemon and skips
the port broadcast the other enters) exists only here. Each rank counts the daemons DCP makes (a counting subclass
of DCP's daemon handle for the rank's duration, as a test's spy would be): more than one on a rank fails, and so
does none (the manager under test did not save through the daemon: this cell runs only managers that declare
``async_checkpointer = "process"``). A daemon still running when the run ends is the control layer's
``LeakedProcess``; a rank waiting in a collective the other never enters is a deadlock naming both.
"""

from __future__ import annotations

from typing import Any

from racecheck.scenarios.manager_ranks import rank_main, two_ranks

#: The daemons DCP made in this rank (each forked rank starts with its own copy of the list, emptied first).
MADE: list[Any] = []


_COUNTED: dict[type, type] = {}


def counted_daemon_class(real: type) -> type:
    """A subclass of DCP's daemon handle class ``real`` that counts each daemon made into ``MADE``."""
    if real not in _COUNTED:
        def __init__(self: Any, pg_init_info: Any) -> None:
            MADE.append(self)
            real.__init__(self, pg_init_info)

        _COUNTED[real] = type("CountedCheckpointProcess", (real,), {"__init__": __init__, "__module__": __name__})
    return _COUNTED[real]


def process_rank_main(rank: int, factory: Any, directory: str, steps: tuple[int, ...]) -> None:
    """One rank's saves (``rank_main``), counting the checkpoint daemons DCP starts in this rank."""
    from torch.distributed.checkpoint import _async_process_executor as executor

    real = executor._AsyncCheckpointProcess
    MADE.clear()
    executor._AsyncCheckpointProcess = counted_daemon_class(real)
    try:
        rank_main(rank, factory, directory, steps)
    finally:
        executor._AsyncCheckpointProcess = real
    made = len(MADE)
    MADE.clear()
    if made == 0:
        raise AssertionError(f"rank {rank}: no save went through DCP's checkpoint daemon (this cell is for a manager "
                             "over async_save with async_checkpointer_type=PROCESS)")
    if made > 1:
        raise AssertionError(f"rank {rank}: {made} checkpoint daemons in one process (DCP keeps one; a save made "
                             "while the first daemon was starting started another)")


def manager_ranks_process(ctx: Any) -> None:
    """Two ranks (forked processes in one gloo group), each with its own manager saving through DCP's checkpoint
    daemon (process-based async_save), keep_last_n=1, saves of steps 1, 2, 3 back to back, then finalize() and
    close(): at every step of every process the tracker names a checkpoint whose every rank part is complete; each
    rank made exactly one daemon; no rank hangs; afterwards a fresh manager resumes step 3 with both ranks' parts,
    and no thread or daemon is left running.

    Reader: target. The tracker and each rank part's complete marker are read from the fake store by name; the
    checkpoint is loaded through a fresh instance of the manager (its resume) in the root process.
    """
    two_ranks(ctx, process_rank_main)
