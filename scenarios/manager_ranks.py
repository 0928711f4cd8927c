"""The manager scenario on two ranks: each rank is a process of the run (forked, as
``torch.multiprocessing.start_processes`` starts them), meets the other in a gloo process group served by
racecheck's model of the ranks, and runs the same saves through its own instance of the manager; rank 0's tracker
and retention race the other rank's writes.

Why a scenario of its own: the bugs it is for exist only across ranks (radixark/miles #1763 and Megatron-Bridge
#4820: rank 0 finalizes when its own part is done, while another rank still writes; see
``../shared/checkpoint-races-2026.md``). The instant check runs in the root process, at
every step of every rank (``manager_sentinel``): it reads the run's fake store, which the ranks reach through
their proxies, so what it sees is one instant of every process. A checkpoint made by several ranks is complete
when every rank's part (``<checkpoint>/rank_<r>/``) holds the complete marker (``manager_contract``).
"""

from __future__ import annotations

from typing import Any

from racecheck.scenarios.manager_contract import consistent_ranks, rank_state
from racecheck.scenarios.manager_leaks import no_leaked_threads
from racecheck.scenarios.manager_sentinel import Sentinel
from racecheck.scenarios.managers import KEEP_LAST_N, config, resumed

WORLD_SIZE = 2


def rank_main(rank: int, factory: Any, directory: str, steps: tuple[int, ...]) -> None:
    """One rank: join the group, then the same saves, finalize and close as every other rank."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="file:///racecheck-manager-ranks", rank=rank,
                            world_size=WORLD_SIZE)
    manager = factory(directory, keep_last_n=KEEP_LAST_N)
    try:
        for step in steps:
            manager.save(step, rank_state(step, rank))
        manager.finalize()
    finally:
        manager.close()
    dist.destroy_process_group()


def manager_ranks(ctx: Any) -> None:
    """Two ranks (forked processes in one gloo group), each with its own manager, keep_last_n=1, saves of steps
    1, 2, 3 back to back, then finalize() and close(): at every step of every rank the tracker names a checkpoint
    whose every rank part is complete; afterwards a fresh manager resumes step 3 with both ranks' parts, and no
    thread is left running.

    Reader: target. The tracker and each rank part's complete marker are read from the fake store by name; the
    checkpoint is loaded through a fresh instance of the manager (its resume) in the root process.
    """
    two_ranks(ctx, rank_main)


def two_ranks(ctx: Any, main: Any) -> None:
    """``manager_ranks`` with ``main`` as each rank's body (``rank_main``'s arguments): the sentinel's instant
    check while the ranks run, then the resume in the root process."""
    import torch.multiprocessing as tmp

    steps, _checks = config(ctx)
    no_leaked_threads()
    sentinel = Sentinel(ctx.target.io_class, ctx.directory, WORLD_SIZE)
    sentinel.start()
    try:
        tmp.start_processes(main, args=(ctx.target.factory, ctx.directory, steps), nprocs=WORLD_SIZE,
                            join=True, start_method="fork")
    finally:
        sentinel.stop()
    sentinel.check()
    state = resumed(ctx)
    step = None if state is None else consistent_ranks(state, WORLD_SIZE)
    if step != steps[-1]:
        raise AssertionError(f"after finalize() on every rank, resume() gives {step!r}; step {steps[-1]} was saved")
