"""``ModelCheckpoint`` paths that touch checkpoint files outside the ``CheckpointIO`` (so no IO plugin can order
them), made safe when the plugin is ``LockedAsyncCheckpointIO``. With any other plugin it behaves exactly like
``ModelCheckpoint``."""

from __future__ import annotations

from typing import Any, Optional
from weakref import proxy

import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities.model_helpers import is_overridden
from racecheck.fixed_impl.locked_async import LockedAsyncCheckpointIO, path_key


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
    * ``best_model_path`` is bookkept when a save is *queued*. If that save later fails (or is refused because
      an earlier one failed), the path is dropped from ``best_k_models`` and ``best_model_path`` /
      ``best_model_score`` / ``kth_best_model_path`` are recomputed from the remaining entries, the next time
      any of them is read or the callback state is saved: ``best_model_path`` never names a checkpoint that was
      not written. The error itself still surfaces from the plugin (next call or teardown).
    """

    _io: Optional[LockedAsyncCheckpointIO] = None

    # ``best_model_path`` is a property so that every reader (``ckpt_path="best"``, user code after a failed fit,
    # ``state_dict``) sees the reconciled value; ModelCheckpoint's own code assigns it as a plain attribute.
    @property
    def best_model_path(self) -> str:
        self._forget_failed_saves()
        return self.__dict__.get("_best_model_path", "")

    @best_model_path.setter
    def best_model_path(self, value: str) -> None:
        self.__dict__["_best_model_path"] = value

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._io = _locked_io(trainer)
        super().setup(trainer, pl_module, stage)

    def state_dict(self) -> dict[str, Any]:
        self._forget_failed_saves()
        return super().state_dict()

    def _forget_failed_saves(self) -> None:
        """Drop checkpoints whose save failed from the bookkeeping and recompute best / kth from what is left."""
        io = self._io
        failed = io.failed_saves() if io is not None else frozenset()
        if not failed:
            return
        best = self.__dict__.get("_best_model_path", "")
        dropped = [p for p in self.best_k_models if path_key(p) in failed]
        if not dropped and not (best and path_key(best) in failed):
            return
        for p in dropped:
            del self.best_k_models[p]
        models = self.best_k_models
        if models:
            best = (min if self.mode == "min" else max)(models, key=models.get)  # type: ignore[arg-type]
            self.__dict__["_best_model_path"], self.best_model_score = best, models[best]
        else:
            self.__dict__["_best_model_path"], self.best_model_score = "", None
        k = len(models) + 1 if self.save_top_k == -1 else self.save_top_k
        if models and len(models) == k:
            kth = (max if self.mode == "min" else min)(models, key=models.get)  # type: ignore[arg-type]
            self.kth_best_model_path, self.kth_value = kth, models[kth]
        else:  # not full any more: the next save must not evict
            self.kth_best_model_path = ""
            self.kth_value = torch.tensor(torch.inf if self.mode == "min" else -torch.inf)

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
