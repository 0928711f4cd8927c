"""Managers over DCP's process-based ``async_save`` (``AsyncCheckpointerType.PROCESS``, torch 2.13): the saver is a
daemon, a spawned process of the run, and every file it writes goes to the run's fake filesystem through its
proxy. For ``tests/managers/test_mgr48_process.py`` (``-m slow``: each schedule spawns a daemon that imports torch).

Why these need a little more than the thread-based managers: DCP asks the saving process for its process group
(the daemon's own group is set up from it), so a manager made outside one starts a group of one over a real file
store; and the daemon is a global of the process (``_CHECKPOINT_PROCESS``) that outlives the manager unless its
``close()`` stops it (what the "no leaks" oracle asks: ``LeakyDaemonManager`` does not, and is caught).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

from racecheck.fixed_impl import DurableCheckpointManager
from racecheck.scenarios.manager_storage import DcpWriter
from racecheck.scenarios.naive_managers import KempnerStyleManager

__racecheck_instrument__ = ["racecheck.fixed_impl.checkpoint_manager", "racecheck.fixed_impl.durability",
                            "racecheck.fixed_impl.dcp_state", "racecheck.fixed_impl.rank_layout",
                            "racecheck.scenarios.naive_managers", "racecheck.scenarios.manager_storage",
                            "torch.distributed.checkpoint._async_process_executor",
                            "torch.distributed.checkpoint.state_dict_saver",
                            "torch.distributed.checkpoint.filesystem",
                            "torch.distributed.checkpoint.state_dict_loader"]


def process_save(state: dict[str, Any], path: str) -> Any:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dcp.async_save(state, checkpoint_id=path, async_checkpointer_type=AsyncCheckpointerType.PROCESS)


class OwnGroup:
    """A process group of one over a real file store, when the process has none (DCP's daemon needs one)."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self.store: str | None = None
        if not dist.is_initialized():
            self.store = tempfile.mktemp(prefix="racecheck-dcp-store-", dir="/tmp")  # real disk, outside the fake fs
            dist.init_process_group("gloo", init_method="file://" + self.store, rank=0, world_size=1)

    def close(self, stop_daemon: bool = True) -> None:
        import torch.distributed as dist
        from torch.distributed.checkpoint import _async_process_executor as executor

        try:
            if stop_daemon:
                daemon, executor._CHECKPOINT_PROCESS = executor._CHECKPOINT_PROCESS, None
                if daemon is not None:
                    daemon.__del__()  # tells the daemon to stop and joins it
        finally:
            if self.store is not None and dist.is_initialized():
                dist.destroy_process_group()
            if self.store is not None and os.path.exists(self.store):
                os.remove(self.store)


class ProcessDurableManager(DurableCheckpointManager):
    """The fixed manager's protocol with DCP's daemon as the saver; ``close()`` stops the daemon."""

    stop_daemon = True

    def __init__(self, directory: str, keep_last_n: int = 1) -> None:
        self.group = OwnGroup()
        super().__init__(directory, keep_last_n)

    def start_save(self, state: dict[str, Any], path: str) -> Any:
        return process_save(state, path)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.group.close(self.stop_daemon)


class LeakyDaemonManager(ProcessDurableManager):
    """Right protocol, but the daemon is never stopped: it outlives the manager (a leaked process)."""

    stop_daemon = False


class ProcessDcpWriter(DcpWriter):
    def __init__(self) -> None:
        self.group = OwnGroup()

    def start(self, state: dict[str, Any], path: str) -> Any:
        return process_save(state, path)

    def close(self) -> None:
        self.group.close()


class ProcessKempnerManager(KempnerStyleManager):
    """KempnerForge #102 with the process-based saver: ``latest`` swapped while the daemon still writes."""

    writer_class = ProcessDcpWriter
