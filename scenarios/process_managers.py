"""Naive managers over DCP's *process-based* ``async_save`` (``AsyncCheckpointerType.PROCESS``, torch 2.13), each the
mechanism of a public report with DCP's checkpoint daemon as the saver, as ``CheckpointManager`` targets
(``racecheck run manager-ranks-process --target racecheck.scenarios.process_managers:ProcessKempnerManager``).

Why a module of its own: the process saver needs what the thread-based one does not (a process group, a daemon to
stop: ``fixed_impl.process_manager``), and the catalogue must be seen to catch the reports' mechanisms with it too.

* ``ProcessKempnerManager`` (KempnerForge #102/#103 with the process-based saver): ``latest`` swapped and
  ``keep_last_n`` cleanup run while the daemon still writes. On two ranks its back-to-back saves also meet
  NVIDIA-NeMo/Automodel#3824 (a rank that already sees its daemon skips the port broadcast the other enters).
* ``ProcessBackToBackManager`` (NVIDIA-NeMo/Automodel#3824 alone): the tracker is right (each save finalized in
  order, every rank agreeing before rank 0 moves it), but a save starts while the previous one is still in flight,
  as a trainer's model and optimizer saves do: DCP checks its daemon on the caller thread and assigns it on its
  worker, so a second save made while the first daemon starts starts a second one (two daemons on a rank), or one
  rank skips the port broadcast the other enters (the ranks hang).
"""

from __future__ import annotations

from typing import Any

from racecheck.fixed_impl import rank_layout
from racecheck.fixed_impl.process_manager import PROCESS_MODULES, OwnGroup, process_save, stop_daemon
from racecheck.scenarios.manager_storage import DcpWriter
from racecheck.scenarios.naive_managers import KempnerStyleManager, NaiveManager

__racecheck_instrument__ = ["racecheck.scenarios.naive_managers", "racecheck.scenarios.manager_storage",
                            "racecheck.fixed_impl.process_manager", "racecheck.fixed_impl.dcp_state",
                            "racecheck.fixed_impl.rank_layout", *PROCESS_MODULES]


class ProcessDcpWriter(DcpWriter):
    """DCP's daemon as the writer: a group of one when the process has none; ``close`` stops the daemon."""

    def __init__(self) -> None:
        self.group = OwnGroup()

    def start(self, state: dict[str, Any], path: str) -> Any:
        return process_save(state, path, no_dist=rank_layout.world()[1] > 1)

    def close(self) -> None:
        try:
            stop_daemon()
        finally:
            self.group.close()


class ProcessKempnerManager(KempnerStyleManager):
    """KempnerForge #102 with the process-based saver: ``latest`` swapped while the daemon still writes."""

    async_checkpointer = "process"
    writer_class = ProcessDcpWriter


class ProcessBackToBackManager(NaiveManager):
    """NVIDIA-NeMo/Automodel#3824: saves started back to back over DCP's daemon; the tracker itself is right."""

    async_checkpointer = "process"
    writer_class = ProcessDcpWriter

    def save(self, step: int, state: dict[str, Any]) -> Any:
        future = self.start(state, step)  # the previous save may still be starting the daemon
        self.pending.append((step, future))
        return future

    def finalized(self, step: int) -> None:
        """Every rank's part written before rank 0 moves the tracker, and no rank goes on before it moved (no
        retention: what this manager gets wrong is the daemons)."""
        if rank_layout.all_agree(True, self.world_size):
            self.advance_tracker(step)
        rank_layout.barrier(self.world_size)
