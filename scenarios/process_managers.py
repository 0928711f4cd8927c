"""Naive managers over DCP's *process-based* ``async_save`` (``AsyncCheckpointerType.PROCESS``, torch 2.13), each the
mechanism of a public report with DCP's checkpoint daemon as the saver, as ``CheckpointManager`` targets
(``racecheck run manager-ranks-process --target racecheck.scenarios.process_managers:ProcessKempnerManager``).

Why a module of its own: the process saver needs what the thread-based one does not (a process group, a daemon to
stop: ``fixed_impl.process_manager``), and the catalogue must be seen to catch the reports' mechanisms with it too.

* ``ProcessKempnerManager`` (KempnerForge #102/#103 with the process-based saver): ``latest`` swapped and
  ``keep_last_n`` cleanup run while the daemon still writes. On two ranks its back-to-back saves also meet
  NVIDIA-NeMo/Automodel#3824 (a rank that already sees its daemon skips the port broadcast the other enters).
"""

from __future__ import annotations

from typing import Any

from racecheck.fixed_impl import rank_layout
from racecheck.fixed_impl.process_manager import PROCESS_MODULES, OwnGroup, process_save, stop_daemon
from racecheck.scenarios.manager_storage import DcpWriter
from racecheck.scenarios.naive_managers import KempnerStyleManager

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
