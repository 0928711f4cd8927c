"""The buggy checkpoint managers of the catalogue: each one is the mechanism of a public 2026 report, written here
from its description (our own code), as a ``CheckpointManager`` target (``racecheck run --target
racecheck.scenarios.naive_managers:MegatronStyleManager``).

Why naive managers live in the catalogue: the manager scenarios must be seen to catch each mechanism with default
options, and a user's own manager is judged by the same scenarios. What each gets wrong (see
docs/checkpoint-managers.md for the reports):

* ``MegatronStyleManager`` (Megatron-Bridge #4678): the new ``iter_N/`` exists as soon as the async save is
  prepared; retention runs right after scheduling, on the training thread, keeps the numerically newest
  directories (the incomplete one among them) and deletes the complete one the tracker still names.
* ``MegatronScanManager`` (Megatron-Bridge #5184): retention is a finalizer, but the next save's directory is
  prepared before the previous save is finalized, and the finalizer's retention scans every visible ``iter_*``:
  it keeps the incomplete newer one and deletes the checkpoint it has just made the tracker name.
* ``SkyRLStyleManager`` (SkyRL #2145): the step file is advanced and the previous checkpoint deleted as soon as
  the new save is scheduled, while it is still pending.
* ``KempnerStyleManager`` (KempnerForge #102): ``dcp.async_save`` (thread-based) returns a future; the main thread
  swaps ``latest`` (a symlink there; a file renamed over ``latest`` here: the fake filesystem has no symlinks) and
  runs ``keep_last_n`` cleanup while the future is pending: a resume finds no ``.metadata``.
* ``Rank0CommitManager`` (radixark/miles #1763, Megatron-Bridge #4820): the fixed manager's one-rank protocol, but
  finalization commits the tracker and runs retention on rank 0 once rank 0's own part is durable, with no
  agreement that every rank's is: right on one rank, and on two the tracker names a checkpoint rank 1 is writing.

On several ranks (the ``manager-ranks`` scenario) every naive manager writes each rank's part
(``rank_layout.part``) and, as the frameworks do, moves the tracker and deletes on rank 0 alone.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import Future
from typing import Any

from racecheck.fixed_impl import DurableCheckpointManager, rank_layout
from racecheck.scenarios.manager_storage import (
    METADATA,
    DcpWriter,
    ShardWriter,
    read_tracker,
    remove_tree,
    write_tracker,
)

__racecheck_instrument__ = ["racecheck.scenarios.manager_storage", "racecheck.fixed_impl.dcp_state",
                            "racecheck.fixed_impl.rank_layout", "racecheck.fixed_impl.checkpoint_manager",
                            "torch.distributed.checkpoint._async_thread_executor",
                            "torch.distributed.checkpoint.filesystem",
                            "torch.distributed.checkpoint.state_dict_saver",
                            "torch.distributed.checkpoint.state_dict_loader"]


class NaiveManager:
    """What the naive managers share: a writer, the saves in flight, a tracker read on resume. Subclasses say when
    the tracker moves and what retention deletes."""

    tracker_file = "latest"
    complete_marker = METADATA
    prefix = "step_"
    writer_class: Any = ShardWriter

    def __init__(self, directory: str, keep_last_n: int = 1) -> None:
        self.directory, self.keep_last_n = directory, keep_last_n
        os.makedirs(directory, exist_ok=True)
        self.writer = self.writer_class()
        self.pending: list[tuple[int, Future]] = []
        self.rank, self.world_size = rank_layout.world()

    def start(self, state: dict[str, Any], step: int) -> Future:
        """This rank's part of the save of ``step``, started on the writer."""
        return self.writer.start(state, rank_layout.part(self.path(step), self.rank, self.world_size))

    def advance_tracker(self, step: int) -> None:
        if self.rank == 0:  # the tracker is rank 0's
            write_tracker(self.directory, self.tracker_file, self.tracker_text(step))

    @classmethod
    def name(cls, step: int) -> str:
        return f"{cls.prefix}{step}"

    @staticmethod
    def tracked(text: str) -> str:
        return text

    def path(self, step: int) -> str:
        return os.path.join(self.directory, self.name(step))

    def visible_steps(self) -> list[int]:
        """Steps of every checkpoint directory on disk, complete or not, oldest first."""
        pattern = re.compile(re.escape(self.prefix) + r"(\d+)$")
        found = [pattern.match(n) for n in os.listdir(self.directory)]
        return sorted(int(m.group(1)) for m in found if m)

    def delete_all_but_newest(self, keep: int) -> None:
        if self.rank != 0:  # retention is rank 0's
            return
        for step in self.visible_steps()[:-keep]:
            remove_tree(self.path(step))

    def finalized(self, step: int) -> None:
        """What a save's finalization does once its write is done (the tracker, here)."""
        self.advance_tracker(step)

    def tracker_text(self, step: int) -> str:
        return self.name(step)

    def finalize_done(self, block: bool) -> None:
        while self.pending and (block or self.pending[0][1].done()):
            step, future = self.pending.pop(0)
            future.result()
            self.finalized(step)

    def save(self, step: int, state: dict[str, Any]) -> Future:
        raise NotImplementedError

    def finalize(self) -> None:
        self.finalize_done(block=True)

    def resume(self) -> tuple[int, dict[str, Any]] | None:
        text = read_tracker(self.directory, self.tracker_file)
        if text is None:
            return None
        loaded = self.writer.load(os.path.join(self.directory, self.tracked(text)))
        return loaded["step"], loaded

    def close(self) -> None:
        try:
            self.finalize()
        finally:
            self.writer.close()


class MegatronStyleManager(NaiveManager):
    """Megatron-Bridge #4678: retention on the training thread right after the save is scheduled."""

    tracker_file = "latest_checkpointed_iteration.txt"
    prefix = "iter_"

    @classmethod
    def name(cls, step: int) -> str:
        return f"iter_{step:07d}"

    @staticmethod
    def tracked(text: str) -> str:
        return f"iter_{int(text):07d}"

    def tracker_text(self, step: int) -> str:
        return str(step)

    def save(self, step: int, state: dict[str, Any]) -> Future:
        self.finalize_done(block=False)  # maybe_finalize: the saves already written
        future = self.start(state, step)
        self.pending.append((step, future))
        self.delete_all_but_newest(self.keep_last_n)  # keeps the newest: the incomplete one just prepared
        return future


class MegatronScanManager(MegatronStyleManager):
    """Megatron-Bridge #5184: retention is the finalizer's, but it scans every visible iter_* directory."""

    def save(self, step: int, state: dict[str, Any]) -> Future:
        future = self.start(state, step)  # the new directory is prepared first
        self.pending.append((step, future))
        self.finalize_done(block=False)
        return future

    def finalized(self, step: int) -> None:
        super().finalized(step)
        self.delete_all_but_newest(self.keep_last_n)  # the newest visible may be a save still in flight


class SkyRLStyleManager(NaiveManager):
    """SkyRL #2145: the step file advances and the previous checkpoint is deleted while the new save is pending."""

    tracker_file = "latest_ckpt_global_step.txt"
    prefix = "global_step_"

    @staticmethod
    def tracked(text: str) -> str:
        return f"global_step_{int(text)}"

    def tracker_text(self, step: int) -> str:
        return str(step)

    def save(self, step: int, state: dict[str, Any]) -> Future:
        future = self.start(state, step)
        self.pending.append((step, future))
        self.advance_tracker(step)
        self.delete_all_but_newest(self.keep_last_n)  # max_ckpts_to_keep
        return future

    def finalized(self, step: int) -> None:
        pass  # the tracker was advanced at scheduling time


class KempnerStyleManager(NaiveManager):
    """KempnerForge #102: ``latest`` swapped and ``keep_last_n`` cleanup run while ``dcp.async_save`` is pending."""

    writer_class = DcpWriter

    def save(self, step: int, state: dict[str, Any]) -> Future:
        future = self.start(state, step)
        self.pending.append((step, future))
        self.advance_tracker(step)
        self.delete_all_but_newest(self.keep_last_n)
        return future

    def finalized(self, step: int) -> None:
        pass


class Rank0CommitManager(DurableCheckpointManager):
    """radixark/miles #1763, Megatron-Bridge #4820: rank 0 finalizes (tracker, retention) once its own part is
    durable, without hearing from the other ranks: the fixed manager's protocol is right on one rank only."""

    def agreed(self, ok: bool) -> bool:
        return ok
