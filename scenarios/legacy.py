"""A model of Lightning 1.8's asynchronous checkpointing, the version the upstream report (#14035) was filed on.

What it models, checked against the lightning 1.8.6 wheel's ``pytorch/plugins/io/async_plugin.py``,
``lite/plugins/io/torch_io.py`` and ``lite/utilities/cloud_io.py``:

* the executor (one worker) is created in ``__init__``, ``teardown`` shuts it down and re-raises a stored error;
* ``save_checkpoint`` submits the *caller's* checkpoint object, with no copy of its tensors;
* a background error is stored and raised at the next ``save_checkpoint`` and again at ``teardown``;
* ``remove_checkpoint`` runs on the caller thread, straight through to the filesystem (``exists`` then ``rm``);
* the write serialises into memory, then opens the *final* path with ``fsspec.open(path, "wb")`` (no temp file,
  no rename, no fsync) and keeps it open while writing: a remove at that moment is Windows' sharing violation,
  ``PermissionError [WinError 32]``, the seed report's exact error.

What it does not model: the rest of 1.8 (its Trainer, ModelCheckpoint); it is a CheckpointIO only, written here,
not copied, and runs against today's fsspec and torch.
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fsspec
import torch
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO

__racecheck_instrument__ = ["fsspec.implementations.local"]


def _filesystem(path: Any) -> Any:
    return fsspec.core.url_to_fs(str(path))[0]


class Lightning18TorchCheckpointIO(CheckpointIO):
    """Lightning 1.8's ``TorchCheckpointIO``: serialise to memory, then write the final file in place."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        if storage_options is not None:
            raise TypeError("storage_options is not supported by Lightning18TorchCheckpointIO")
        _filesystem(path).makedirs(os.path.dirname(str(path)), exist_ok=True)
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        with fsspec.open(str(path), "wb") as f:  # the final name, held open for the whole write
            f.write(buffer.getvalue())

    def load_checkpoint(self, path: Any, map_location: Any = None, **_: Any) -> dict[str, Any]:
        fs = _filesystem(path)
        if not fs.exists(str(path)):
            raise FileNotFoundError(f"Checkpoint at {path} not found. Aborting training.")
        with fs.open(str(path), "rb") as f:
            return torch.load(f, map_location=map_location, weights_only=False)

    def remove_checkpoint(self, path: Any) -> None:
        fs = _filesystem(path)
        if fs.exists(str(path)):
            fs.rm(str(path), recursive=True)


class Lightning18AsyncCheckpointIO(_WrappingCheckpointIO):
    """Lightning 1.8's ``AsyncCheckpointIO`` over its ``TorchCheckpointIO`` (see the module docstring)."""

    def __init__(self, checkpoint_io: CheckpointIO | None = None) -> None:
        super().__init__(checkpoint_io if checkpoint_io is not None else Lightning18TorchCheckpointIO())
        self._executor = ThreadPoolExecutor(max_workers=1)
        self._error: BaseException | None = None

    def save_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        def write(*args: Any, **kwargs: Any) -> None:
            try:
                self.checkpoint_io.save_checkpoint(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - stored and re-raised on the caller thread, as 1.8 did
                self._error = exc

        self._executor.submit(write, *args, **kwargs)
        if self._error:
            raise self._error

    def teardown(self) -> None:
        self._executor.shutdown(wait=True)
        if self._error:
            raise self._error
