"""What the naive managers of the catalogue write with: a shard writer on a thread executor (Megatron-style
async writes) and DCP's thread-based ``async_save``; and how each reads a checkpoint back.

Why shared: the buggy managers differ in *when* they advance the tracker and delete, not in how a checkpoint is
written, so the write, the tracker swap and the reader live here once. Both layouts are directories whose
complete marker (``.metadata``) is written last through a temp name: a directory without it is incomplete.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from racecheck.fixed_impl import dcp_state, rank_layout

METADATA = dcp_state.METADATA


def write_tracker(directory: str, tracker_file: str, text: str) -> None:
    """Point the tracker at ``text`` atomically (a temp file renamed over it), as a symlink swap would."""
    tmp = os.path.join(directory, f".{tracker_file}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, os.path.join(directory, tracker_file))


def read_tracker(directory: str, tracker_file: str) -> str | None:
    try:
        with open(os.path.join(directory, tracker_file)) as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return None


def remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=False)


class ShardWriter:
    """Megatron-style async writes: one background thread writes the shard, then ``.metadata`` (temp + rename)."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-writer")

    def start(self, state: dict[str, Any], path: str) -> Future:
        """The directory exists as soon as the save is prepared (as Megatron's does); the write is queued."""
        os.makedirs(path, exist_ok=True)
        return self._executor.submit(self._write, state, path)

    @staticmethod
    def _write(state: dict[str, Any], path: str) -> None:
        import torch

        torch.save(state, os.path.join(path, "shard_0.pt"))
        tmp = os.path.join(path, METADATA + ".tmp")
        with open(tmp, "w") as handle:
            handle.write(str(state["step"]))
        os.replace(tmp, os.path.join(path, METADATA))

    @staticmethod
    def load(path: str) -> dict[str, Any]:
        """Every rank's part of the checkpoint at ``path`` (``rank_layout``), merged."""
        return rank_layout.load_parts(path, ShardWriter.load_one)

    @staticmethod
    def load_one(path: str) -> dict[str, Any]:
        import torch

        if not os.path.isfile(os.path.join(path, METADATA)):
            raise FileNotFoundError(f"{path} has no {METADATA}: not a complete checkpoint")
        return torch.load(os.path.join(path, "shard_0.pt"), weights_only=True)

    def close(self) -> None:
        self._executor.shutdown(wait=True)


class DcpWriter:
    """DCP's thread-based ``async_save`` (a ThreadPoolExecutor per save inside torch); ``load`` through DCP."""

    def start(self, state: dict[str, Any], path: str) -> Future:
        return dcp_state.async_save(state, path, no_dist=rank_layout.world()[1] > 1)

    @staticmethod
    def load(path: str) -> dict[str, Any]:
        return rank_layout.load_parts(path, dcp_state.load)

    def close(self) -> None:
        pass
