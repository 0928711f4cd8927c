"""``ModelCheckpoint`` paths that touch checkpoint files outside the ``CheckpointIO`` (so no IO plugin can order
them), made safe when the plugin is ``LockedAsyncCheckpointIO``. With any other plugin it behaves exactly like
``ModelCheckpoint``."""

from __future__ import annotations

from typing import Any
from weakref import proxy

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities.model_helpers import is_overridden
from racecheck.fixed_impl.locked_async import LockedAsyncCheckpointIO


def _locked_io(trainer: Any) -> LockedAsyncCheckpointIO | None:
    io = trainer.strategy.checkpoint_io
    return io if isinstance(io, LockedAsyncCheckpointIO) else None


class LockedModelCheckpoint(ModelCheckpoint):
    """``ModelCheckpoint`` that never looks at a checkpoint file whose write is still pending.

    * ``save_last="link"``: the stock callback removes ``last.ckpt`` and symlinks (or, on Windows, copies) it to
      the newest checkpoint with ``os`` calls on the training thread, while that checkpoint may still be queued:
      a dangling link (a crash then leaves no resumable "last"), a ``FileNotFoundError`` from the copy, or a
      pending full save of ``last.ckpt`` landing over the new link. Here the plugin is flushed first.
    * Name versioning (``-v1``) asks ``file_exists``; on disk a pending save is not there yet and a pending
      remove still is. Here the plugin answers with the state the queue will leave (no flush needed).
    * Loggers that act on ``after_save_checkpoint`` (e.g. upload the file) are notified only once the file is
      written (flush first), and only when a logger overrides that hook, so the common case stays async.
    """

    @staticmethod
    def _link_checkpoint(trainer: Any, filepath: str, linkpath: str) -> None:
        io = _locked_io(trainer)
        if io is not None and trainer.is_global_zero:
            io.wait()
        ModelCheckpoint._link_checkpoint(trainer, filepath, linkpath)

    def file_exists(self, filepath: Any, trainer: Any) -> bool:
        io = _locked_io(trainer)
        if io is None:
            return super().file_exists(filepath, trainer)
        local = io.exists(filepath) if trainer.is_global_zero else False
        return trainer.strategy.reduce_boolean_decision(local, all=False)

    def _save_checkpoint(self, trainer: Any, filepath: str) -> None:
        io = _locked_io(trainer)
        if io is None:
            return super()._save_checkpoint(trainer, filepath)
        # Same body as ModelCheckpoint._save_checkpoint, with a flush before loggers that read the file.
        trainer.save_checkpoint(filepath, self.save_weights_only)
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = filepath
        if trainer.is_global_zero:
            if any(is_overridden("after_save_checkpoint", lg, Logger) for lg in trainer.loggers):
                io.wait()
            for logger in trainer.loggers:
                logger.after_save_checkpoint(proxy(self))
        return None
