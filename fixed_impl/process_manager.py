"""The reference manager over DCP's *process-based* ``async_save`` (``AsyncCheckpointerType.PROCESS``, torch 2.13):
the fixed manager's protocol (``checkpoint_manager``) with DCP's checkpoint daemon as the saver.

Why a class of its own: the daemon is a global of the process (``_CHECKPOINT_PROCESS``) that DCP starts on the
first save and never stops, and it asks the saving process for a process group. What it adds to the protocol:

* **One daemon per process, however fast saves come** (NVIDIA-NeMo/Automodel#3824). DCP checks the global on the
  caller thread but assigns it on its executor's worker once the daemon answered, so a second save made meanwhile
  starts a second daemon (on two ranks, one rank then skips the port broadcast the other enters: a cross-rank
  hang). Rule 1 (one save in flight: ``save`` first waits for the previous save's future) already closes that
  window: the global is assigned before the future completes, so every save after the first finds the daemon,
  on every rank alike. The check and the start of the daemon are not moved under a lock of our own: that would be
  reaching into DCP's private executor.
* **The daemon is stopped by ``close()``** (and joined): otherwise it outlives the manager (a leaked process).
* **A process group when the process has none**: a group of one over a real file store (outside any fake
  filesystem), destroyed by ``close()``. On several ranks the ranks' own group is used, and each rank's daemon
  saves the rank's part with ``no_dist`` (no collective among the daemons: each part is complete on its own).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

from racecheck.fixed_impl import dcp_state
from racecheck.fixed_impl.checkpoint_manager import DurableCheckpointManager

#: DCP's process executor (the daemon's start, its pipe) besides the modules of the thread-based saver.
PROCESS_MODULES = ["torch.distributed.checkpoint._async_process_executor", *dcp_state.DCP_MODULES[1:]]

__racecheck_instrument__ = ["racecheck.fixed_impl.checkpoint_manager", "racecheck.fixed_impl.durability",
                            "racecheck.fixed_impl.dcp_state", "racecheck.fixed_impl.rank_layout",
                            *PROCESS_MODULES]


def process_save(state: dict[str, Any], path: str, no_dist: bool = False) -> Any:
    """``dcp.async_save`` of ``state`` into ``path`` by DCP's checkpoint daemon; its Future."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType

    options: dict[str, Any] = {"no_dist": True} if no_dist else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dcp.async_save(state, checkpoint_id=path, async_checkpointer_type=AsyncCheckpointerType.PROCESS,
                              **options)


def stop_daemon() -> None:
    """Tell this process's DCP daemon to stop and join it (DCP's own ``__del__`` does both); no daemon: nothing."""
    from torch.distributed.checkpoint import _async_process_executor as executor

    daemon, executor._CHECKPOINT_PROCESS = executor._CHECKPOINT_PROCESS, None
    if daemon is not None:
        daemon.__del__()


class OwnGroup:
    """A process group of one over a real file store, when the process has none (DCP's daemon needs one)."""

    def __init__(self) -> None:
        import torch.distributed as dist

        self.store: str | None = None
        if not dist.is_initialized():
            handle, self.store = tempfile.mkstemp(prefix="racecheck-dcp-store-", dir="/tmp")  # the real disk
            os.close(handle)
            os.remove(self.store)  # the file store makes it
            dist.init_process_group("gloo", init_method="file://" + self.store, rank=0, world_size=1)

    def close(self) -> None:
        import torch.distributed as dist

        if self.store is None:
            return
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        finally:
            if os.path.exists(self.store):
                os.remove(self.store)
            self.store = None


class ProcessCheckpointManager(DurableCheckpointManager):
    """``CheckpointManager`` over DCP's process-based ``async_save``: the fixed protocol, one daemon per process,
    stopped by ``close()``."""

    async_checkpointer = "process"  # what the ``manager-ranks-process`` cell asks of a manager

    def __init__(self, directory: str, keep_last_n: int = 1, durable: bool = True) -> None:
        self.group = OwnGroup()
        try:
            super().__init__(directory, keep_last_n, durable)
        except BaseException:
            self.group.close()
            raise

    def start_save(self, state: dict[str, Any], path: str) -> Any:
        return process_save(state, path, no_dist=self.world_size > 1)

    def close(self) -> None:
        try:
            super().close()
        finally:
            try:
                stop_daemon()
            finally:
                self.group.close()
