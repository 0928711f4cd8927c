"""Programs of two ranks, started the way users start them, for tests/ranks (spawned ranks import this module)."""

import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as tmp


def _complete(step_dir, world_size):
    return all(os.path.exists(os.path.join(step_dir, f"rank{r}.pt")) for r in range(world_size))


def _retention_rank(rank, root, fixed):
    """Rank 0 removes incomplete checkpoints (a crash's leftovers) after writing its own shard; the barrier that
    says every shard of the step is written comes after that retention (wrong) or before it (fixed)."""
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    step = os.path.join(root, "step1")
    if rank == 0:
        os.makedirs(step)
    dist.barrier()
    torch.save(torch.full((2,), rank), os.path.join(step, f"rank{rank}.pt"))
    if fixed:
        dist.barrier()
    if rank == 0:
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            if name.startswith("step") and not _complete(path, 2):
                shutil.rmtree(path)
    if not fixed:
        dist.barrier()
    if rank == 0:
        assert _complete(step, 2), "retention deleted the step being written: step1 is gone"
    dist.destroy_process_group()


def _retention(fixed, method):
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.start_processes(_retention_rank, args=(root, fixed), nprocs=2, join=True, start_method=method)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def retention_fork():
    _retention(False, "fork")


def retention_fixed_fork():
    _retention(True, "fork")


def retention_spawn():
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.spawn(_retention_rank, args=(root, False), nprocs=2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _mismatch_rank(rank, root):
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    t = torch.zeros(2)
    if rank == 0:
        dist.broadcast(t, src=0)
    else:
        dist.barrier()
    dist.destroy_process_group()


def mismatch_fork():
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.start_processes(_mismatch_rank, args=(root,), nprocs=2, join=True, start_method="fork")
    finally:
        shutil.rmtree(root, ignore_errors=True)
