"""Reference fix one level up: a checkpoint manager over DCP's thread-based ``async_save`` with a tracker and
``keep_last_n`` retention, that the catalogue's manager scenarios prove (docs/checkpoint-managers.md).

Why each rule (every upstream fix of 2026 is one of them; see ../shared/checkpoint-races-2026.md):

1. **One save in flight.** ``save`` first finishes the previous save (waits for its future, then finalizes it), so
   saves reach the disk in call order and retention never meets a directory being written (Megatron-Bridge #4820).
2. **The tracker is committed only when durable.** Finalizing a save fsyncs every file and directory of its
   checkpoint, then writes the tracker through a temp file (fsynced) renamed over ``latest`` and fsyncs the
   directory (KempnerForge #103, SkyRL #2145).
3. **Retention is the save's finalizer**, after the tracker moved (Megatron-Bridge #4678), and bounded by the
   finalized step (#5184): it only considers checkpoints at or before it, and never deletes the tracker's target.
4. **A save's error surfaces** at the next ``save``, ``finalize`` or ``close``; the tracker and every checkpoint
   are then left as they were.

``resume`` reads the tracker and loads its checkpoint through DCP; without a tracker (a job that crashed before its
first commit) it falls back to the newest checkpoint that loads. A directory that does not load is skipped, however
it fails: DCP 2.13 fsyncs ``.metadata.tmp`` before its buffered pickle reaches the file, so a power loss after the
rename can leave an empty ``.metadata`` (``EOFError``) in a save that was never committed. A lock serialises ``save``/``finalize``/``close`` across threads.

On several ranks (a process group is initialised when the manager is made): every rank writes its own part
(``<checkpoint>/rank_<r>/``, ``rank_layout``) with DCP's ``no_dist`` save (no collective on DCP's worker thread);
finalizing waits for the rank's own future and fsyncs its part, then every rank agrees that every part is durable
(a collective of the ranks' main threads) before rank 0 alone commits the tracker and runs retention, and a
barrier lets no rank go on before that commit (radixark/miles #1763, Megatron-Bridge #4820: a tracker committed
when one rank's part is done names a checkpoint another rank is still writing).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from concurrent.futures import Future
from typing import Any

from racecheck.fixed_impl import dcp_state, rank_layout
from racecheck.fixed_impl.durability import fsync_dir, fsync_file, fsync_tree

__racecheck_instrument__ = ["racecheck.fixed_impl.durability", "racecheck.fixed_impl.dcp_state",
                            "racecheck.fixed_impl.rank_layout", *dcp_state.DCP_MODULES]

_NAME = re.compile(r"step_(\d{6,})$")


class DurableCheckpointManager:
    """``CheckpointManager`` over ``dcp.async_save``: checkpoints ``step_NNNNNN/``, tracker ``latest``."""

    tracker_file = "latest"
    complete_marker = dcp_state.METADATA

    def __init__(self, directory: str, keep_last_n: int = 1, durable: bool = True) -> None:
        """``durable=False`` skips every fsync (rule 2's durability, not its order): faster, and what the
        ``manager-crash`` scenario catches (a power loss after ``finalize`` returned loses the tracker's move)."""
        if not isinstance(keep_last_n, int) or keep_last_n < 1:
            raise ValueError(f"keep_last_n must be a positive integer, got {keep_last_n!r}")
        self.directory, self.keep_last_n, self.durable = directory, keep_last_n, durable
        os.makedirs(directory, exist_ok=True)
        self._lock = threading.Lock()
        self._in_flight: tuple[int, str, Future] | None = None
        self.rank, self.world_size = rank_layout.world()

    @staticmethod
    def tracked(text: str) -> str:
        if not _NAME.match(text):
            raise ValueError(f"not a checkpoint name: {text!r}")
        return text

    @staticmethod
    def name(step: int) -> str:
        return f"step_{step:06d}"

    def save(self, step: int, state: dict[str, Any]) -> Future:
        """Finish (and finalize) the previous save, then start this one; the Future of its write."""
        with self._lock:
            self._drain()
            name = self.name(step)
            path = os.path.join(self.directory, name)
            if name == self._tracked_name():
                raise ValueError(f"step {step} is the checkpoint the tracker names; it is never overwritten")
            if self.rank == 0 and os.path.exists(path):
                shutil.rmtree(path)  # a save that a crash or an error left incomplete
            rank_layout.barrier(self.world_size)  # no rank writes its part before that removal
            future = self.start_save(state, rank_layout.part(path, self.rank, self.world_size))
            self._in_flight = (step, path, future)
            return future

    def finalize(self) -> None:
        """Wait for the save in flight and finalize it; its error, if it failed."""
        with self._lock:
            self._drain()

    def close(self) -> None:
        self.finalize()

    # ----- the storage: DCP's thread-based async_save; a subclass may save through something else ------------

    def start_save(self, state: dict[str, Any], path: str) -> Future:
        """Start writing ``state`` into the directory ``path`` (its ``.metadata`` last); the write's Future. On
        several ranks ``path`` is this rank's part, saved with no collective."""
        return dcp_state.async_save(state, path, no_dist=self.world_size > 1)

    def load_one(self, path: str) -> dict[str, Any]:
        """The state one rank saved at ``path``; FileNotFoundError when it has no ``.metadata``."""
        return dcp_state.load(path)

    def load(self, path: str) -> dict[str, Any]:
        """The state saved at ``path`` by every rank (``rank_layout``); FileNotFoundError when a part is
        incomplete."""
        return rank_layout.load_parts(path, self.load_one)

    def resume(self) -> tuple[int, dict[str, Any]] | None:
        candidates = [self._tracked_name()] + [self.name(s) for s in reversed(self._steps())]
        for name in candidates:
            if name is None:
                continue
            try:
                loaded = self.load(os.path.join(self.directory, name))
            except Exception:  # noqa: BLE001 - an uncommitted save a crash cut short: not a checkpoint to resume
                if name == self._tracked_name():
                    raise  # the tracker's target must load: never hide that
                continue
            return loaded["step"], loaded
        return None

    # ----- a save's finalizer ---------------------------------------------------------------------------------

    def _drain(self) -> None:
        if self._in_flight is None:
            return
        step, path, future = self._in_flight
        self._in_flight = None
        error = future.exception()
        if error is None and self.durable and self.world_size > 1:
            fsync_tree(rank_layout.part(path, self.rank, self.world_size))  # rank 0 fsyncs the whole tree below
        if not self.agreed(error is None):  # every rank's part durable, or none commits
            raise error or RuntimeError(f"another rank's part of {os.path.basename(path)} failed; nothing committed")
        if self.rank == 0:
            if self.durable:
                fsync_tree(path)
                fsync_dir(self.directory)
            self._commit_tracker(os.path.basename(path))
            self._retain(step)
        # no rank goes on (reads the tracker, returns from finalize) before rank 0 committed: under Windows
        # semantics a rank reading ``latest`` while rank 0 renames over it makes the rename fail (WinError 5)
        rank_layout.barrier(self.world_size)

    def agreed(self, ok: bool) -> bool:
        """Whether every rank's part of the save being finalized is durable (``ok``: this rank's is)."""
        return rank_layout.all_agree(ok, self.world_size)

    def _commit_tracker(self, name: str) -> None:
        tmp = os.path.join(self.directory, f".{self.tracker_file}.tmp")
        with open(tmp, "w") as handle:
            handle.write(name)
        if self.durable:
            fsync_file(tmp)
        os.replace(tmp, os.path.join(self.directory, self.tracker_file))
        if self.durable:
            fsync_dir(self.directory)

    def _retain(self, finalized: int) -> None:
        older = [s for s in self._steps() if s <= finalized]
        keep = {self.name(s) for s in older[-self.keep_last_n:]} | {self._tracked_name()}
        for step in older:
            if self.name(step) not in keep:
                shutil.rmtree(os.path.join(self.directory, self.name(step)))

    def _steps(self) -> list[int]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for m in map(_NAME.match, names) if m)

    def _tracked_name(self) -> str | None:
        try:
            with open(os.path.join(self.directory, self.tracker_file)) as handle:
                text = handle.read().strip()
        except FileNotFoundError:
            return None
        return text if _NAME.match(text) else None
