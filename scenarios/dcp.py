"""Checkpoint IOs a user would write over ``torch.distributed.checkpoint.async_save``: checkpoints are directories.

Why in the catalogue: a checkpoint here is a directory of shards plus a ``.metadata`` file written last, which no
``torch.load`` of a file can read. The scenarios judge it through the target's own ``load_checkpoint`` (a fresh
instance), so the catalogue works for this format as it does for Lightning's files.

* ``DcpAsyncCheckpointIO``: what a user writes first. ``save_checkpoint`` starts ``async_save`` and keeps the
  future only for ``teardown`` (fire and forget); ``remove_checkpoint`` deletes the directory on the caller's
  thread; ``load_checkpoint`` reads whatever is there. Nothing orders a remove or a load after a pending save.
* ``WaitingDcpAsyncCheckpointIO``: the same, but every call first waits for the saves in flight (a save for the
  previous one, so that at most one runs): the order of the calls is the order on disk.

Both run in one process without ``torch.distributed`` initialised (DCP warns and saves on its own rank). DCP runs
each save on a ``ThreadPoolExecutor`` it creates in ``_async_thread_executor`` and writes through
``filesystem``; ``__racecheck_instrument__`` names them, so that executor and those writes are controlled.
"""

from __future__ import annotations

import os
import shutil
import warnings
from concurrent.futures import Future
from typing import Any

from lightning.fabric.plugins import CheckpointIO
from racecheck.fixed_impl import dcp_state

__racecheck_instrument__ = [
    "torch.distributed.checkpoint._async_thread_executor",  # the executor each async_save runs its write on
    "torch.distributed.checkpoint.filesystem",  # the shard and metadata writes, their fsync and rename
    "torch.distributed.checkpoint.state_dict_saver",
    "torch.distributed.checkpoint.state_dict_loader",
    "racecheck.fixed_impl.dcp_state",  # the load's template, read from the checkpoint's metadata
]


def _dcp() -> Any:
    import torch.distributed.checkpoint as dcp

    return dcp


class DcpAsyncCheckpointIO(CheckpointIO):
    """A checkpoint per directory, saved with ``dcp.async_save``; futures are waited for only at ``teardown``."""

    def __init__(self) -> None:
        self._pending: list[Future] = []

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "torch.distributed is uninitialised": a one-process save, as meant
            self._pending.append(_dcp().async_save(checkpoint, checkpoint_id=os.fspath(path)))

    def load_checkpoint(self, path: Any, map_location: Any = None, **_: Any) -> dict[str, Any]:
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"Checkpoint at {path} not found")
        state = dcp_state.template(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _dcp().load(state, checkpoint_id=path)
        return state

    def remove_checkpoint(self, path: Any) -> None:
        path = os.fspath(path)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)

    def teardown(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()


class WaitingDcpAsyncCheckpointIO(DcpAsyncCheckpointIO):
    """``DcpAsyncCheckpointIO`` whose every call first waits for the saves in flight: the calls' order is the
    order on disk, and a save's error surfaces at the next call."""

    def _settle(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        self._settle()
        super().save_checkpoint(checkpoint, path, storage_options)

    def load_checkpoint(self, path: Any, map_location: Any = None, **kwargs: Any) -> dict[str, Any]:
        self._settle()
        return super().load_checkpoint(path, map_location, **kwargs)

    def remove_checkpoint(self, path: Any) -> None:
        self._settle()
        super().remove_checkpoint(path)
