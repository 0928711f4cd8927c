"""The programs of the DCP tests: back-to-back process-based ``async_save`` on one rank (issue 48).

``two_saves`` is what a trainer does: the model's save, then the optimizer's, both with
``async_checkpointer_type=PROCESS``, then it waits for both. torch 2.13's executor checks its global
``_CHECKPOINT_PROCESS`` on the caller thread and assigns it on its worker thread once the daemon has started, so
the second save can start a second daemon. The oracle is the issue's "one daemon per process however fast saves
come": the program counts the daemons DCP makes (a counting subclass put in place of ``_AsyncCheckpointProcess``
for the program's duration, as a test's spy would be). ``two_saves_locked`` runs the same with a fixed executor
(the check and the daemon's start under one lock, on the caller thread): clean.

Each program is a fresh trainer process as far as DCP can tell: no daemon at its start, and every daemon it made
told to stop at its end (what CPython does when the trainer lets go of the daemon's handle; racecheck keeps every
object a run named alive until the run ends, so the program says it explicitly). Module-level names only: the
daemon is a spawned child, which imports what it is handed.
"""

import os
import shutil
import tempfile
import threading
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import _async_process_executor as executor
from torch.distributed.checkpoint import state_dict_saver
from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType

RealDaemon = executor._AsyncCheckpointProcess
RealExecutor = executor._ProcessBasedAsyncCheckpointExecutor
MADE = []  # the daemons the running program made (a spy: read by its oracle, emptied at its start)


class CountedDaemon(RealDaemon):
    """DCP's daemon handle, counted as it is made."""

    def __init__(self, pg_init_info):
        MADE.append(self)
        super().__init__(pg_init_info)


_start_lock = threading.Lock()


class LockedExecutor(RealExecutor):
    """The fix: the daemon is made on the caller thread, its check and its start under one lock, so no second
    save sees no daemon while the first one's is starting (NeMo Automodel#3824's workaround, made a lock)."""

    def execute_save(self, staging_future_or_state_dict, *, process_group=None, **kwargs):
        with _start_lock:
            if executor._CHECKPOINT_PROCESS is None:
                info = executor._ProcessGroupInitInfo(process_group)
                executor._CHECKPOINT_PROCESS = executor._AsyncCheckpointProcess(pg_init_info=info)
        return super().execute_save(staging_future_or_state_dict, process_group=process_group, **kwargs)


def _saves(root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dcp.async_save({"w": torch.ones(2)}, checkpoint_id=os.path.join(root, "model"),
                               async_checkpointer_type=AsyncCheckpointerType.PROCESS)
        optim = dcp.async_save({"m": torch.zeros(2)}, checkpoint_id=os.path.join(root, "optim"),
                               async_checkpointer_type=AsyncCheckpointerType.PROCESS)
        model.result()
        optim.result()


def _trainer(executor_class):
    """One rank's trainer: a process group of one, two saves, then every daemon it made stopped."""
    root = tempfile.mkdtemp(prefix="racecheck-dcp-")
    MADE.clear()
    executor._CHECKPOINT_PROCESS = None  # a fresh trainer process: no daemon yet
    executor._AsyncCheckpointProcess = CountedDaemon
    state_dict_saver._ProcessBasedAsyncCheckpointExecutor = executor_class
    try:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(root, "store"), rank=0, world_size=1)
        _saves(root)
        assert len(MADE) == 1, f"{len(MADE)} checkpoint daemons on one rank (DCP keeps one per process)"
    finally:
        executor._CHECKPOINT_PROCESS = None
        try:
            for daemon in MADE:
                daemon.__del__()  # the trainer exits: each daemon it made is told to stop (and joined)
        finally:  # a run stopped inside the loop above (shrinking, a replay's end) still leaves no group behind
            MADE.clear()
            executor._AsyncCheckpointProcess = RealDaemon
            state_dict_saver._ProcessBasedAsyncCheckpointExecutor = RealExecutor
            if dist.is_initialized():
                dist.destroy_process_group()
            shutil.rmtree(root, ignore_errors=True)


def two_saves():
    """torch's executor, as shipped."""
    _trainer(RealExecutor)


def two_saves_locked():
    """The fixed executor: clean."""
    _trainer(LockedExecutor)


def _rank(rank, root, world, ordered=False):
    """One rank of ``two_ranks``: rank 1 waits for its model's save before it starts the optimizer's (more work
    between its saves), so its executor has assigned the daemon by then and it skips the broadcast rank 0 enters.
    ``ordered``: both ranks wait so (the twin that ``benchmarks/bench_ranks.py`` times: clean)."""
    dist.init_process_group("gloo", init_method="file://" + os.path.join(root, "store"), rank=rank,
                            world_size=world)
    executor._CHECKPOINT_PROCESS = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = dcp.async_save({"w": torch.ones(2)}, checkpoint_id=os.path.join(root, "model"),
                                   async_checkpointer_type=AsyncCheckpointerType.PROCESS)
            if rank == 1 or ordered:
                model.result()
            optim = dcp.async_save({"m": torch.zeros(2)}, checkpoint_id=os.path.join(root, "optim"),
                                   async_checkpointer_type=AsyncCheckpointerType.PROCESS)
            model.result()
            optim.result()
        dist.barrier()
    finally:
        daemon, executor._CHECKPOINT_PROCESS = executor._CHECKPOINT_PROCESS, None
        if daemon is not None:
            daemon.__del__()
        dist.destroy_process_group()


def two_ranks():
    """Two ranks started as users do (``torch.multiprocessing.spawn``), each saving model then optimizer: when a
    rank sees the daemon its first save started, it skips the second save's broadcast that the other enters
    (NVIDIA-NeMo/Automodel#3824)."""
    import torch.multiprocessing as tmp

    root = tempfile.mkdtemp(prefix="racecheck-dcp-ranks-")
    try:
        tmp.spawn(_rank, args=(root, 2), nprocs=2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def two_ranks_ordered():
    """``two_ranks`` with each rank waiting for its model's save before its optimizer's: both see their daemon,
    both skip the second broadcast."""
    import torch.multiprocessing as tmp

    root = tempfile.mkdtemp(prefix="racecheck-dcp-ranks-")
    try:
        tmp.spawn(_rank, args=(root, 2, True), nprocs=2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":  # with plain threads: python tests/dcp/dcp_programs.py
    for name in ("two_saves", "two_saves_locked"):
        try:
            globals()[name]()
            print(name, "ok")
        except AssertionError as exc:
            print(name, "fails:", exc)
