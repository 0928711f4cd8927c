"""A rank's side: in a child process of the run, ``torch.distributed``'s process-group calls, collectives,
point-to-point operations and stores become requests to the parent's model (``world.Ranks``, ``stores.Stores``).

``swap.install`` runs in every child of a run that may use ``torch.distributed`` (forked or spawned, before the
process's code): it puts these functions in place of torch's in ``torch.distributed``, its ``distributed_c10d`` and
every module that bound one of them by name. Tensors cross as ``torch.save`` bytes (never torch's shared-memory
reducers), objects as pickles (as torch pickles them for the object collectives); each result is written into the
caller's tensors or lists in place, as the real call does. A rank's identity (rank, world size, a group's ranks) is
kept here once ``init_process_group`` returns, so ``get_rank`` and ``get_world_size`` are answered without a request:
no other rank can change them.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.control.processes import link
from racecheck.control.ranks import stores, world

__racecheck_engine__ = True

STATE: dict[str, Any] = {"rank": None, "size": None, "backend": None, "thread": None}


class RankGroup:
    """A process group as a rank holds it (``new_group``'s result): its key in the parent's model, its global
    ranks in group order."""

    def __init__(self, key: str, ranks: tuple[int, ...]) -> None:
        self.key, self.ranks = key, tuple(ranks)
        import torch

        vars(self)["_device_types"] = [torch.device("cpu")]  # torch's name: DCP's async_save asks for a CPU backend

    def rank(self) -> int:
        return self.ranks.index(STATE["rank"]) if STATE["rank"] in self.ranks else -1

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"<racecheck process group {self.key} ranks={list(self.ranks)}>"


class Done:
    """What an ``async_op=True`` collective returns: the model completed it at the call."""

    def __init__(self, then: Callable[[], Any] | None = None) -> None:
        self._then = then

    def wait(self, timeout: Any = None) -> bool:
        then, self._then = self._then, None
        if then is not None:
            then()
        return True

    def is_completed(self) -> bool:
        return self._then is None

    def is_success(self) -> bool:
        return True


@contextmanager
def _outside() -> Iterator[None]:
    """torch.save/load and pickling run as no thread of the run (a forked child's stand-ins make no points)."""
    bound, rec = runtime.current_run(), runtime.current_thread_record()
    runtime.bind(None, None)
    try:
        yield
    finally:
        runtime.bind(bound, rec)


def _pack(value: Any) -> bytes:
    import torch

    with _outside():
        buffer = io.BytesIO()
        torch.save(value, buffer)
        return buffer.getvalue()


def _unpack(data: bytes | None) -> Any:
    import torch

    if data is None:
        return None
    with _outside():
        return torch.load(io.BytesIO(data), weights_only=True)


def _ask(mid: str, method: str, *args: Any) -> Any:
    if link.LINK is None:
        raise RuntimeError("racecheck: torch.distributed is modelled only in a child process of the run")
    # A thread of the run the rank started (DCP's background saver) asks through its own proxy; any other thread's
    # request would interleave with theirs on the one pipe.
    if threading.get_ident() != STATE["thread"] and runtime.current_thread_record() is None:
        raise RuntimeError("racecheck: torch.distributed called from a thread that is not a thread of the run is "
                           "not modelled (start it from a thread of the run)")
    return link.LINK.call(mid, method, args, {})


def _group(group: Any) -> RankGroup:
    if STATE["rank"] is None:
        raise ValueError(world.NOT_INITIALIZED)
    if isinstance(group, RankGroup):
        return group
    return RankGroup("WORLD", tuple(range(STATE["size"])))


def _peer(group: RankGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    """A src or dst as the group's own rank (torch takes the global one, or ``group_src``/``group_dst``)."""
    if group_rank is not None:
        return group_rank
    rank = 0 if rank is None else rank
    if rank not in group.ranks:
        raise ValueError(f"{what} rank {rank} is not part of group {group.key}")
    return group.ranks.index(rank)


def _op(op: Any) -> str:
    return getattr(op, "name", None) or str(op).rsplit(".", 1)[-1]


def _collective(name: str, group: Any, agreed: dict, inputs: dict | None) -> dict | None:
    """The request: None where this process is not in the group."""
    g = _group(group)
    if STATE["rank"] not in g.ranks:
        return None
    data = None if inputs is None else _pack(inputs)
    out = _ask(world.MID, "collective", name, g.key, tuple(sorted(agreed.items())), data)
    return _unpack(out) or {}


def _dumps(obj: Any) -> bytes:
    with _outside():
        return pickle.dumps(obj)


def _loads(data: bytes) -> Any:
    with _outside():
        return pickle.loads(data)


def _finish(async_op: bool) -> Done | None:
    return Done() if async_op else None


# ----- process groups ----------------------------------------------------------------------------------------


def _rendezvous(init_method: str | None, rank: int, world_size: int) -> tuple[str, int, int]:
    """The world's key, the rank and the world size as torch's rendezvous handlers read them."""
    init_method = init_method or "env://"
    base, _, query = init_method.partition("?")
    params = dict(item.split("=", 1) for item in query.split("&") if "=" in item)
    rank = int(params.get("rank", rank))
    world_size = int(params.get("world_size", world_size))
    if base.startswith("env://"):
        env = os.environ
        for var in ("MASTER_ADDR", "MASTER_PORT"):
            if var not in env:
                raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment "
                                 f"variable {var} expected, but not set")
        rank = int(env["RANK"]) if rank < 0 and "RANK" in env else rank
        world_size = int(env["WORLD_SIZE"]) if world_size < 0 and "WORLD_SIZE" in env else world_size
        base = f"env://{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    return base, rank, world_size


def init_process_group(backend: Any = None, init_method: str | None = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, **_: Any) -> None:
    if store is not None:
        key = getattr(store, "name", None) or repr(store)
    else:
        key, rank, world_size = _rendezvous(init_method, rank, world_size)
    if rank < 0 or world_size < 1:
        raise ValueError(f"racecheck: init_process_group needs a rank and a world_size (got {rank}, {world_size})")
    _ask(world.MID, "init", key, rank, world_size)
    STATE["rank"], STATE["size"], STATE["backend"] = rank, world_size, str(backend or "gloo").split(":")[-1]


def destroy_process_group(group: Any = None) -> None:
    if group is None or (isinstance(group, RankGroup) and group.key == "WORLD"):
        _ask(world.MID, "destroy")
        STATE["rank"] = STATE["size"] = None


def is_initialized() -> bool:
    return STATE["rank"] is not None


def get_rank(group: Any = None) -> int:
    return _group(group).rank()


def get_world_size(group: Any = None) -> int:
    return _group(group).size()


def get_backend(group: Any = None) -> str:
    _group(group)
    return STATE["backend"]


def _get_default_group() -> RankGroup:
    """torch's private accessor of the world group, which DCP's ``async_save`` reads."""
    return _group(None)


def get_process_group_ranks(group: Any) -> list[int]:
    return list(_group(group).ranks)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group``'s ``group_rank`` (DCP's coordinator, on a group passed to ``save``)."""
    members = _group(group).ranks  # a rank outside the group gets its answers too, as from torch
    if not 0 <= group_rank < len(members):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return members[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    members = _group(group).ranks
    if global_rank not in members:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return members.index(global_rank)


def new_group(ranks: Any = None, *args: Any, **kwargs: Any) -> RankGroup:
    members = tuple(sorted(ranks)) if ranks else tuple(range(_group(None).size()))
    key, members = _collective("new_group", None, {"ranks": members}, None)
    return RankGroup(key, tuple(members))


# ----- collectives -------------------------------------------------------------------------------------------


def broadcast(tensor: Any, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Done | None:
    g = _group(group)
    out = _collective("broadcast", g, {"src": _peer(g, src, group_src, "src")}, {"tensor": tensor})
    if out:
        tensor.copy_(out["tensor"])
    return _finish(async_op)


def all_reduce(tensor: Any, op: Any = "SUM", group: Any = None, async_op: bool = False) -> Done | None:
    out = _collective("all_reduce", group, {"op": _op(op)}, {"tensor": tensor})
    if out:
        tensor.copy_(out["tensor"])
    return _finish(async_op)


def reduce(tensor: Any, dst: int | None = None, op: Any = "SUM", group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> Done | None:
    g = _group(group)
    out = _collective("reduce", g, {"dst": _peer(g, dst, group_dst, "dst"), "op": _op(op)}, {"tensor": tensor})
    if out and "tensor" in out:
        tensor.copy_(out["tensor"])
    return _finish(async_op)


def all_gather(tensor_list: list, tensor: Any, group: Any = None, async_op: bool = False) -> Done | None:
    out = _collective("all_gather", group, {}, {"tensor": tensor})
    if out:
        _fill(tensor_list, out["list"])
    return _finish(async_op)


def _fill(targets: list, values: list) -> None:
    if len(targets) != len(values):
        raise ValueError(f"racecheck: a list of {len(targets)} tensors for {len(values)} ranks")
    for target, value in zip(targets, values, strict=True):
        target.copy_(value)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Done | None:
    out = _collective("all_gather_into_tensor", group, {}, {"tensor": input_tensor})
    if out:
        output_tensor.copy_(out["tensor"].reshape(output_tensor.shape))
    return _finish(async_op)


def gather(tensor: Any, gather_list: list | None = None, dst: int | None = None, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Done | None:
    g = _group(group)
    out = _collective("gather", g, {"dst": _peer(g, dst, group_dst, "dst")}, {"tensor": tensor})
    if out and "list" in out:
        _fill(gather_list if gather_list is not None else [], out["list"])
    return _finish(async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int | None = None, group: Any = None,
            async_op: bool = False, group_src: int | None = None) -> Done | None:
    g = _group(group)
    out = _collective("scatter", g, {"src": _peer(g, src, group_src, "src")},
                      {"tensor": tensor, "list": list(scatter_list) if scatter_list else None})
    if out:
        tensor.copy_(out["tensor"])
    return _finish(async_op)


def reduce_scatter(output: Any, input_list: list, op: Any = "SUM", group: Any = None,
                   async_op: bool = False) -> Done | None:
    out = _collective("reduce_scatter", group, {"op": _op(op)}, {"list": list(input_list)})
    if out:
        output.copy_(out["tensor"])
    return _finish(async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = "SUM", group: Any = None,  # noqa: A002 - torch's name
                          async_op: bool = False) -> Done | None:
    out = _collective("reduce_scatter_tensor", group, {"op": _op(op)}, {"tensor": input})
    if out:
        output.copy_(out["tensor"].reshape(output.shape))
    return _finish(async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None, timeout: Any = None) -> Done | None:
    _collective("barrier", group, {}, None)
    return _finish(async_op)


def monitored_barrier(group: Any = None, timeout: Any = None, wait_all_ranks: bool = False) -> None:
    _collective("monitored_barrier", group, {}, None)


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    out = _collective("all_gather_object", group, {}, {"object": _dumps(obj)})
    if out:
        object_list[:len(out["objects"])] = [_loads(b) for b in out["objects"]]


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None, group: Any = None,
                  group_dst: int | None = None) -> None:
    g = _group(group)
    out = _collective("gather_object", g, {"dst": _peer(g, dst, group_dst, "dst")}, {"object": _dumps(obj)})
    if out and "objects" in out and object_gather_list is not None:
        object_gather_list[:len(out["objects"])] = [_loads(b) for b in out["objects"]]


def broadcast_object_list(object_list: list, src: int | None = None, group: Any = None, device: Any = None,
                          group_src: int | None = None) -> None:
    g = _group(group)
    out = _collective("broadcast_object_list", g, {"src": _peer(g, src, group_src, "src")},
                      {"objects": [_dumps(o) for o in object_list]})
    if out:
        object_list[:] = [_loads(b) for b in out["objects"]][:len(object_list)]


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group: Any = None, group_src: int | None = None) -> None:
    g = _group(group)
    given = None if scatter_object_input_list is None else [_dumps(o) for o in scatter_object_input_list]
    out = _collective("scatter_object_list", g, {"src": _peer(g, src, group_src, "src")}, {"objects": given})
    if out:
        scatter_object_output_list[0] = _loads(out["objects"][0])


# ----- point to point ----------------------------------------------------------------------------------------


def send(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0, group_dst: int | None = None) -> None:
    g = _group(group)
    peer = g.ranks[_peer(g, dst, group_dst, "dst")]
    _ask(world.MID, "send", peer, tag, _pack(tensor))


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0, group_src: int | None = None) -> int:
    g = _group(group)
    peer = None if src is None and group_src is None else g.ranks[_peer(g, src, group_src, "src")]
    sender, data = _ask(world.MID, "recv", peer, tag)
    tensor.copy_(_unpack(data))
    return sender


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Done:
    send(tensor, dst, group, tag, group_dst)
    return Done()


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Done:
    """The receive happens at ``wait()`` (a rank may post it before the message is sent)."""
    return Done(lambda: recv(tensor, src, group, tag, group_src))


# ----- stores ------------------------------------------------------------------------------------------------


class ServedStore:
    """``TCPStore`` / ``FileStore`` / ``HashStore`` in a rank: each method a request to the parent's store."""

    def __init__(self, kind: str, address: str) -> None:
        self.name = _ask(stores.MID, "open", kind, address)

    def _call(self, op: str, *args: Any) -> Any:
        return _ask(stores.MID, "call", self.name, op, args)

    def set(self, key: str, value: Any) -> None:
        self._call("set", key, stores.as_bytes(value))

    def get(self, key: str) -> bytes:
        return self._call("get", key)

    def add(self, key: str, amount: int) -> int:
        return self._call("add", key, int(amount))

    def compare_set(self, key: str, expected: Any, desired: Any) -> bytes:
        return self._call("compare_set", key, stores.as_bytes(expected), stores.as_bytes(desired))

    def append(self, key: str, value: Any) -> None:
        self._call("append", key, stores.as_bytes(value))

    def wait(self, keys: list[str], timeout: Any = None) -> None:
        self._call("wait", list(keys))

    def check(self, keys: list[str]) -> bool:
        return self._call("check", list(keys))

    def delete_key(self, key: str) -> bool:
        return self._call("delete_key", key)

    def num_keys(self) -> int:
        return self._call("num_keys")

    def __repr__(self) -> str:
        return f"<racecheck {self.name}>"


def TCPStore(host_name: str, port: int, *args: Any, **kwargs: Any) -> ServedStore:  # noqa: N802 - torch's name
    return ServedStore("TCPStore", f"{host_name}:{int(port)}")


def FileStore(file_name: str, *args: Any, **kwargs: Any) -> ServedStore:  # noqa: N802 - torch's name
    return ServedStore("FileStore", os.path.abspath(file_name))


def HashStore(*args: Any, **kwargs: Any) -> ServedStore:  # noqa: N802 - torch's name
    return ServedStore("HashStore", "")


MODELLED = (
    init_process_group, destroy_process_group, is_initialized, get_rank, get_world_size, get_backend,
    get_process_group_ranks, get_global_rank, get_group_rank, _get_default_group,
    new_group, broadcast, all_reduce, reduce, all_gather, all_gather_into_tensor, gather, scatter, reduce_scatter,
    reduce_scatter_tensor, barrier, monitored_barrier, all_gather_object, gather_object, broadcast_object_list,
    scatter_object_list, send, recv, isend, irecv, TCPStore, FileStore, HashStore,
)


SWAPPED: dict[int, tuple[Any, Any]] = {}  # id of a torch function -> (it, its model), kept alive for the ids

