"""Managers over DCP's process-based ``async_save`` for ``tests/managers/test_mgr48_process.py`` (``-m slow``: each
schedule spawns a daemon that imports torch): the shipped ones (``racecheck.fixed_impl.process_manager``,
``racecheck.scenarios.process_managers``) on one rank, and one that only a test needs.

``LeakyDaemonManager`` keeps the fixed protocol but never stops DCP's daemon, a global of the process
(``_CHECKPOINT_PROCESS``) that outlives the manager unless ``close()`` stops it: what the "no leaks" oracle asks,
and catches.
"""

from __future__ import annotations

from racecheck.fixed_impl.checkpoint_manager import DurableCheckpointManager
from racecheck.fixed_impl.process_manager import PROCESS_MODULES, ProcessCheckpointManager
from racecheck.scenarios.process_managers import ProcessKempnerManager

__racecheck_instrument__ = ["racecheck.fixed_impl.checkpoint_manager", "racecheck.fixed_impl.durability",
                            "racecheck.fixed_impl.dcp_state", "racecheck.fixed_impl.rank_layout",
                            "racecheck.fixed_impl.process_manager", "racecheck.scenarios.process_managers",
                            "racecheck.scenarios.naive_managers", "racecheck.scenarios.manager_storage",
                            *PROCESS_MODULES]

ProcessDurableManager = ProcessCheckpointManager
__all__ = ["LeakyDaemonManager", "ProcessDurableManager", "ProcessKempnerManager"]


class LeakyDaemonManager(ProcessCheckpointManager):
    """Right protocol, but the daemon is never stopped: it outlives the manager (a leaked process)."""

    def close(self) -> None:
        try:
            DurableCheckpointManager.close(self)
        finally:
            self.group.close()
