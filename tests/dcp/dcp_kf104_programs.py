"""KempnerForge #104 (issue 48), our own code from its public description: DCP's thread-based ``async_save`` runs
the save's collectives (the plan's gather and scatter, the metadata's) on the default process group from its
background thread (``AsyncCheckpointExecutor``), while the trainer's main thread goes on to ``dist.barrier()`` on
the same group. Each rank numbers its collectives on a group in the order its threads enter them; when one rank's
main thread reaches the barrier before its saver's next collective and the other rank's saver gets there first,
the two ranks wait in different collectives: a cross-rank deadlock (py-spy showed the saver in ``gather_object``
on one rank and the main thread in ``barrier`` on the other). The fix (``separate_group``): the save's collectives
on a group of their own (``dist.new_group``), so the barrier's count on the default group never meets them.

Ranks are forked (``torch.multiprocessing.start_processes``; ``torch.distributed.checkpoint`` is imported here,
before the fork, so no schedule imports it again), or spawned.
"""

import os
import shutil
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as tmp


def _rank(rank, root, separate):
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    try:
        group = dist.new_group(backend="gloo") if separate else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            saved = dcp.async_save({"w": torch.full((2,), float(rank))}, checkpoint_id=os.path.join(root, "step1"),
                                   process_group=group)
        dist.barrier()  # the trainer's next step waits for every rank, the save still in flight
        saved.result()
    finally:
        dist.destroy_process_group()


def _run(separate, method="fork"):
    root = tempfile.mkdtemp(prefix="racecheck-kf104-")
    try:
        tmp.start_processes(_rank, args=(root, separate), nprocs=2, join=True, start_method=method)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def barrier_during_save():
    """The save's collectives and the barrier on the default group: deadlocks in some schedules."""
    _run(False)


def barrier_during_save_spawn():
    """The same with spawned ranks (forked from a warm template): a rank's memory layout is the template's, so its
    token replays in a fresh process (see the test module's note)."""
    _run(False, "spawn")


def separate_group():
    """The save's collectives on a group of their own: clean."""
    _run(True)
