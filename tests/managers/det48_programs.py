"""Programs for the det48 tests: forked ranks (or plain forked children) whose code starts a thread that completes a
Future while memory is watched, the shape of ``manager-ranks`` (a manager per rank saving on its executor's thread)
in a few dozen steps. Module-level functions only, so a child can reach them by name."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
