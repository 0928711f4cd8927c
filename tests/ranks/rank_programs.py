"""Programs of two ranks, started the way users start them, for tests/ranks (spawned ranks import this module)."""

import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
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
    try:
        torch.save(torch.full((2,), rank), os.path.join(step, f"rank{rank}.pt"))
    except RuntimeError:  # the message names the temporary directory: the same in every schedule instead
        raise AssertionError(f"rank {rank}: step1 was deleted while its shard was being written") from None
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
        assert _complete(step, 2), "rank 0: step1 is incomplete after the barrier"
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


def _retention_spawned(fixed):
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.spawn(_retention_rank, args=(root, fixed), nprocs=2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def retention_spawn():
    _retention_spawned(False)


def retention_fixed_spawn():
    _retention_spawned(True)


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


# ----- programs of collectives: the same code runs on real gloo ranks and on the run's modelled ones -----------

DTYPES = {"int64": torch.int64, "float32": torch.float32, "int32": torch.int32}


def _t(values, dtype):
    return torch.tensor(values, dtype=DTYPES[dtype])


def run_ops(rank, ops):
    """Each op of ``ops`` on this rank, and what it gave this rank (lists of numbers; None where torch leaves a
    rank's buffers unspecified)."""
    out = []
    for op in ops:
        kind, arg, dtype, values = op
        mine = values[rank]
        if kind == "all_reduce":
            t = _t(mine, dtype)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, arg))
            out.append(t.tolist())
        elif kind == "reduce":
            t = _t(mine, dtype)
            dist.reduce(t, dst=arg[0], op=getattr(dist.ReduceOp, arg[1]))
            out.append(t.tolist() if rank == arg[0] else None)
        elif kind == "broadcast":
            t = _t(mine, dtype)
            dist.broadcast(t, src=arg)
            out.append(t.tolist())
        elif kind == "all_gather":
            ts = [torch.zeros(len(mine), dtype=DTYPES[dtype]) for _ in values]
            dist.all_gather(ts, _t(mine, dtype))
            out.append([t.tolist() for t in ts])
        elif kind == "all_gather_into_tensor":
            t = torch.zeros(len(mine) * len(values), dtype=DTYPES[dtype])
            dist.all_gather_into_tensor(t, _t(mine, dtype))
            out.append(t.tolist())
        elif kind == "gather":
            ts = [torch.zeros(len(mine), dtype=DTYPES[dtype]) for _ in values] if rank == arg else None
            dist.gather(_t(mine, dtype), gather_list=ts, dst=arg)
            out.append([t.tolist() for t in ts] if rank == arg else None)
        elif kind == "scatter":
            t = torch.zeros(len(mine), dtype=DTYPES[dtype])
            parts = [_t(v, dtype) for v in values] if rank == arg else None
            dist.scatter(t, scatter_list=parts, src=arg)
            out.append(t.tolist())
        elif kind == "reduce_scatter_tensor":
            t = torch.zeros(len(mine) // len(values), dtype=DTYPES[dtype])
            dist.reduce_scatter_tensor(t, _t(mine, dtype), op=getattr(dist.ReduceOp, arg))
            out.append(t.tolist())
        elif kind == "barrier":
            dist.barrier()
            out.append(None)
        elif kind == "all_gather_object":
            objs = [None] * len(values)
            dist.all_gather_object(objs, {"rank": rank, "values": mine})
            out.append(objs)
        elif kind == "gather_object":
            objs = [None] * len(values) if rank == arg else None
            dist.gather_object(("r", rank, mine), objs, dst=arg)
            out.append(objs)
        elif kind == "broadcast_object_list":
            objs = [("from", rank, v) for v in mine]
            dist.broadcast_object_list(objs, src=arg)
            out.append(objs)
        elif kind == "scatter_object_list":
            got = [None]
            dist.scatter_object_list(got, [("to", r, v) for r, v in enumerate(values)] if rank == arg else None,
                                     src=arg)
            out.append(got)
        elif kind == "send_recv":
            t = _t(mine, dtype)
            if rank == arg:
                dist.send(t, dst=1 - arg)
                out.append(None)
            else:
                sender = dist.recv(t, src=arg)
                out.append([sender, t.tolist()])
        elif kind == "group_ranks":  # a group of rank ``arg`` alone: its ranks translated both ways, on both ranks
            group = dist.new_group([arg])
            asked = []
            for ask, value in ((dist.get_global_rank, 0), (dist.get_group_rank, rank), (dist.get_group_rank, arg)):
                try:
                    asked.append(ask(group, value))
                except ValueError:
                    asked.append("ValueError")
            out.append(asked)
        else:
            raise ValueError(kind)
    return out


def _ops_rank(rank, root, batch, report):
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    report.put((rank, [run_ops(rank, ops) for ops in batch]))
    dist.destroy_process_group()


def modelled_outputs(batch):
    """``batch``'s programs on two ranks of the run: their outputs by rank (a program for ``racecheck.explore``)."""
    import multiprocessing

    root = tempfile.mkdtemp(prefix="rc-ranks-")
    report = multiprocessing.get_context("fork").Queue()
    try:
        tmp.start_processes(_ops_rank, args=(root, batch, report), nprocs=2, join=True, start_method="fork")
        got = dict(report.get() for _ in range(2))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return [got[0], got[1]]


def gloo_worker(rank, root, conn):
    """A real gloo rank kept warm: runs each batch it is sent, answers with its outputs (or the error)."""
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    while True:
        batch = conn.recv()
        if batch is None:
            break
        try:
            conn.send(("ok", [run_ops(rank, ops) for ops in batch]))
        except Exception as exc:  # noqa: BLE001 - the test shows it
            conn.send(("err", repr(exc)))
    dist.destroy_process_group()


# ----- stores ------------------------------------------------------------------------------------------------


def _store_rank(rank, port, key):
    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0)
    if rank == 0:
        store.set("ready", "yes")
        assert store.add("count", 1) in (1, 2)
    else:
        assert store.get(key) == b"yes", "the get saw no set"
        assert store.add("count", 1) in (1, 2)
        store.wait(["count"])
    assert store.compare_set("owner", "", f"rank{rank}") in (b"rank0", b"rank1")
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)  # the ranks meet on the store
    dist.barrier()
    dist.destroy_process_group()


def _stores(key):
    tmp.start_processes(_store_rank, args=(29531, key), nprocs=2, join=True, start_method="fork")


def store_handshake():
    _stores("ready")


def store_never_set():
    _stores("never")


# ----- other ways to start and meet ----------------------------------------------------------------------------


def _skip_rank(rank, root):
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    if rank == 0:
        dist.barrier()  # rank 1 skips it and exits


def skip_fork():
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.start_processes(_skip_rank, args=(root,), nprocs=2, join=True, start_method="fork")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _env_rank(rank, report):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo")  # env://
    pair = dist.new_group([0, 1])
    t = torch.tensor([rank + 1])
    dist.all_reduce(t, group=pair)
    if rank == 0:
        dist.send(t * 10, dst=1)
    else:
        assert dist.recv(t) == 0, "recv from any rank names the sender"
    names = [None, None]
    dist.all_gather_object(names, f"rank{dist.get_rank()}of{dist.get_world_size(pair)}")
    report.put((rank, t.item(), names))
    dist.destroy_process_group()


def env_processes():
    """An ``mp.Process`` per rank meeting on ``env://``, a group of their own, a send and an object gather."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    report = ctx.Queue()
    ranks = [ctx.Process(target=_env_rank, args=(r, report)) for r in range(2)]
    for p in ranks:
        p.start()
    got = sorted(report.get() for _ in ranks)
    for p in ranks:
        p.join()
    assert got == [(0, 3, ["rank0of2", "rank1of2"]), (1, 30, ["rank0of2", "rank1of2"])], got


# ----- DCP --------------------------------------------------------------------------------------------------


def _dcp_rank(rank, root):
    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    dcp.save({f"w{rank}": torch.full((4,), float(rank))}, checkpoint_id=os.path.join(root, "ckpt"))
    dist.barrier()
    dist.destroy_process_group()


def dcp_save_fork():
    """A synchronous ``torch.distributed.checkpoint.save`` by two ranks (its gathers, scatters and barriers)."""
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.start_processes(_dcp_rank, args=(root,), nprocs=2, join=True, start_method="fork")
        assert os.path.exists(os.path.join(root, "ckpt", ".metadata")), "no .metadata after both ranks saved"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _thread_rank(rank, root):
    import threading

    dist.init_process_group("gloo", init_method=f"file://{root}/rendezvous", rank=rank, world_size=2)
    errors = []

    def background():
        try:
            dist.barrier()
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    assert not errors, f"a collective of a thread of the run the rank started failed: {errors}"
    dist.barrier()  # the rank's second collective on WORLD, on both ranks: the thread's barrier was the first


def thread_in_rank_fork():
    root = tempfile.mkdtemp(prefix="rc-ranks-")
    try:
        tmp.start_processes(_thread_rank, args=(root,), nprocs=2, join=True, start_method="fork")
    finally:
        shutil.rmtree(root, ignore_errors=True)
