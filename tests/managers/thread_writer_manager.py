"""The fixed manager's protocol over a lighter storage, for proofs: ``DurableCheckpointManager`` whose saves go
through one writer thread of our own (``manager_storage.ShardWriter``) instead of DCP's ``async_save``.

Why: dpor exhausts the protocol (one save in flight, tracker committed when durable, retention as the finalizer)
in a few schedules over this writer, while DCP's own executor, planner and writes make a space dpor does not
exhaust in thousands of schedules (docs/checkpoint-managers.md). The rules under proof are the manager's; the
storage is the part swapped.
"""

from __future__ import annotations

from typing import Any

from racecheck.fixed_impl import DurableCheckpointManager
from racecheck.scenarios.manager_storage import ShardWriter

__racecheck_instrument__ = ["racecheck.scenarios.manager_storage", "racecheck.fixed_impl.checkpoint_manager",
                            "racecheck.fixed_impl.durability"]


class ThreadWriterDurableManager(DurableCheckpointManager):
    def __init__(self, directory: str, keep_last_n: int = 1) -> None:
        super().__init__(directory, keep_last_n)
        self.writer = ShardWriter()

    def start_save(self, state: dict[str, Any], path: str) -> Any:
        return self.writer.start(state, path)

    def load(self, path: str) -> dict[str, Any]:
        return ShardWriter.load(path)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.writer.close()


class NotDurableManager(DurableCheckpointManager):
    """The fixed manager with ``durable=False``: right order, no fsync (what ``manager-crash`` must catch)."""

    def __init__(self, directory: str, keep_last_n: int = 1) -> None:
        super().__init__(directory, keep_last_n, durable=False)


class LeakyWriterManager(ThreadWriterDurableManager):
    """The protocol right, but ``close()`` never shuts the writer's executor down: its idle worker is left parked
    (what the "no leaks" oracle must catch)."""

    def close(self) -> None:
        DurableCheckpointManager.close(self)
