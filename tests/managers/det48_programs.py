"""Programs for the det48 tests: forked ranks (or plain forked children) whose code starts a thread that completes a
Future while memory is watched, the shape of ``manager-ranks`` (a manager per rank saving on its executor's thread)
in a few dozen steps. Module-level functions only, so a child can reach them by name."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

WORLD_SIZE = 2


def _save(state: dict, step: int) -> int:
    state["step"] = step
    return step


def rank_main(rank: int, peek: bool = False) -> None:
    """One rank: join the group, two saves on its own executor thread, each waited for after a barrier.
    ``peek``: the rank reads what its save wrote before waiting for it (the bug: found when the worker is late)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="file:///racecheck-det48", rank=rank, world_size=WORLD_SIZE)
    state: dict = {}
    with ThreadPoolExecutor(max_workers=1) as pool:
        for step in (1, 2):
            future = pool.submit(_save, state, step)
            dist.barrier()
            if peek:
                assert state.get("step") == step, f"rank {rank} read step {state.get('step')} while saving {step}"
            assert future.result() == step
    dist.destroy_process_group()


def two_ranks(peek: bool = False) -> None:
    import torch.multiprocessing as tmp

    tmp.start_processes(rank_main, args=(peek,), nprocs=WORLD_SIZE, join=True, start_method="fork")


def two_ranks_peeking() -> None:
    two_ranks(peek=True)


# --- issue 48 item 3: a manager that hands DCP its own storage_writer (DCP then asks isinstance(writer, AsyncStager),
# a typing_extensions Protocol, which raised a TypeError under control after other explorations in one process) ---

from racecheck.fixed_impl import DurableCheckpointManager  # noqa: E402
from racecheck.scenarios.naive_managers import __racecheck_instrument__ as _naive_instrument  # noqa: E402

__racecheck_instrument__ = ["racecheck.fixed_impl.checkpoint_manager", *_naive_instrument]


class WriterArgManager(DurableCheckpointManager):
    """The fixed manager, saving through ``dcp.async_save(..., storage_writer=FileSystemWriter(path))`` (DCP's
    defaults otherwise, its fsyncs on)."""

    def start_save(self, state: dict, path: str) -> Any:
        import warnings

        import torch.distributed.checkpoint as dcp

        options: dict[str, Any] = {"no_dist": True} if self.world_size > 1 else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dcp.async_save(state, checkpoint_id=path, storage_writer=dcp.FileSystemWriter(path), **options)
