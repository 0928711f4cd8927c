"""Ranks whose interpreter imports ``torch.distributed`` only inside the rank's function (this module never does):
a spawned rank is handed the model's functions when its code imports them, not before (``ranks.swap.Install``)."""

import multiprocessing
import tempfile


def _rank(rank, root):
    import torch
    import torch.distributed as dist
    from torch.distributed import all_reduce  # bound by name after the import: the model's too

    for fn in (dist.init_process_group, all_reduce, dist.barrier):
        if not fn.__module__.startswith("racecheck."):
            raise AssertionError(f"rank {rank}: torch's own {fn.__name__} in a rank of the run")
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    total = torch.tensor([rank + 1])
    all_reduce(total)
    assert int(total) == 3, f"rank {rank}: all_reduce gave {int(total)}"
    dist.barrier()
    dist.destroy_process_group()


def two_lazy_ranks_spawned():
    root = tempfile.mkdtemp(prefix="rc-lazyrank-")
    context = multiprocessing.get_context("spawn")
    ranks = [context.Process(target=_rank, args=(rank, root)) for rank in range(2)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join()
    assert [p.exitcode for p in ranks] == [0, 0], [p.exitcode for p in ranks]
