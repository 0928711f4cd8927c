"""The parent's model of the ranks of a run: their process groups, collectives and point-to-point messages.

A rank is a child process of the run (``torch.multiprocessing.spawn``, ``mp.Process`` per rank) that called
``init_process_group``; its ``torch.distributed`` calls are requests (``ranks.child``) that its proxy thread performs
here, on the one ``Ranks`` object of the run (served as ``dist``). Why a model and not real gloo: one process runs
at a time under the baton, so a real collective could never complete while its peers are parked.

A collective is two points of the rank: it enters (the k-th collective of that rank on that group) and waits until
every rank of the group has entered its k-th one with the same name and arguments; the last to enter computes
every rank's results (``compute``), and each wait takes its rank's. Ranks that entered different collectives
(rank 0 in a broadcast, rank 1 in a barrier), or a rank that never comes, wait forever: the scheduler reports a
deadlock whose rows name each rank's collective, group and line. ``send`` is buffered (it returns once the message
is queued, as gloo's does for the sizes tests use); ``recv`` waits for a message from its source and tag.
"""

from __future__ import annotations

import io
from typing import Any

from racecheck.control.processes.link import uncontrolled
from racecheck.control.processes.models import Served, calling_process
from racecheck.control.ranks.compute import compute
from racecheck.runtime import RunContract
from racecheck.runtime.access import ACQUIRE, GET, PUT, READ, WRITE, on
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True

MID = "dist"  # the served object's id: the one ``Ranks`` of a run
NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


def unpack(run: RunContract, data: bytes | None) -> Any:
    """A rank's payload (tensors, lists, pickled objects), saved with ``torch.save`` in the child."""
    if data is None:
        return None
    import torch

    with uncontrolled(run):
        return torch.load(io.BytesIO(data), weights_only=True)


def pack(run: RunContract, value: Any) -> bytes:
    import torch

    with uncontrolled(run):
        buffer = io.BytesIO()
        torch.save(value, buffer)
        return buffer.getvalue()


class Slot:
    """The k-th collective of a group: what each rank entered with, and, once all agree, each rank's outputs."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: dict[int, tuple[str, tuple]] = {}  # group rank -> (name, agreed arguments)
        self.inputs: dict[int, Any] = {}
        self.outputs: list[Any] | None = None
        self.error: BaseException | None = None
        self.taken = 0

    def agreed(self) -> bool:
        return len(self.entries) == self.size and len(set(self.entries.values())) == 1

    def done(self) -> bool:
        return self.outputs is not None or self.error is not None


class Group:
    """A process group of a world: its global ranks in group order, each rank's count of collectives, its slots."""

    def __init__(self, name: str, ranks: tuple[int, ...]) -> None:
        self.name = name
        self.ranks = ranks
        self.count = dict.fromkeys(ranks, 0)
        self.slots: dict[int, Slot] = {}

    def accesses(self, k: object, rank: int) -> tuple[tuple, tuple]:
        """What the ``k``-th collective's enter and wait touch: each rank's enter its own object (so the order in
        which ranks enter is no choice the partial-order search explores: it decides nothing), each wait reads
        every rank's (so it happens after every enter, as a barrier's release does)."""
        objs = {r: Obj(ObjKind.BARRIER, f"dist.{self.name}#{k}.rank{r}") for r in self.ranks}
        return on(objs[rank], ACQUIRE), tuple(a for r in self.ranks for a in on(objs[r], READ))


class World:
    """The ranks that met at one rendezvous (``file://``, ``env://``, ``tcp://``, a store): their groups, their
    inboxes. Named ``WORLD`` (``W2.WORLD`` for a run's second)."""

    def __init__(self, key: str, size: int, prefix: str) -> None:
        self.key = key
        self.size = size
        self.prefix = prefix
        self.ranks: dict[int, str] = {}  # global rank -> process label
        self.left: set[int] = set()
        self.groups: dict[str, Group] = {"WORLD": Group(f"{prefix}WORLD", tuple(range(size)))}
        self.made: dict[int, str] = {}  # the WORLD slot of a new_group -> the group's key
        self.inboxes: dict[int, dict[tuple[int, int], list[bytes]]] = {r: {} for r in range(size)}
        self.inbox_objs = {r: Obj(ObjKind.FIFO_QUEUE, f"dist.{prefix}rank{r}.inbox") for r in range(size)}


class Ranks(Served):
    """Every world of a run and which process is which rank (a process is a rank of one world at a time)."""

    def __init__(self, run: RunContract) -> None:
        self._run = run
        self.worlds: dict[str, World] = {}
        self.member: dict[str, tuple[World, int]] = {}  # process label -> (its world, its rank)
        self.enrol(run, MID)

    # ----- membership -----------------------------------------------------------------------------------------

    def init(self, key: str, rank: int, size: int) -> None:
        """``init_process_group``: join the world at ``key``, then wait until all ``size`` ranks have joined."""
        run, label = self._run, calling_process(self._run)
        if label in self.member:
            raise ValueError("trying to initialize the default process group twice!")
        world = self.worlds.get(key)
        if world is None or len(world.left) == world.size:
            world = self.worlds[key] = World(key, size, "" if not self.worlds else f"W{len(self.worlds) + 1}.")
        if world.size != size:
            raise ValueError(f"racecheck: rank {rank} joins {key} with world_size {size}, others with {world.size}")
        if not 0 <= rank < size or rank in world.ranks:
            raise ValueError(f"racecheck: rank {rank} is invalid or taken in {key} (world_size {size})")
        enter, wait = world.groups["WORLD"].accesses("init", rank)
        run.schedule(f"init_process_group {world.prefix}WORLD (rank {rank})", access=enter)
        world.ranks[rank] = label
        self.member[label] = (world, rank)
        run.schedule(f"wait init_process_group {world.prefix}WORLD (rank {rank})", access=wait,
                     enabled=lambda: len(world.ranks) == size)

    def destroy(self) -> None:
        """``destroy_process_group()``: the caller leaves its world (local in torch: no other rank waits)."""
        world, rank = self._mine()
        mine = Obj(ObjKind.BARRIER, f"dist.{world.prefix}WORLD.rank{rank}")  # what it changes is its own membership
        self._run.schedule(f"destroy_process_group (rank {rank})", access=on(mine, WRITE))
        world.left.add(rank)
        del self.member[calling_process(self._run)]

    def _mine(self) -> tuple[World, int]:
        mine = self.member.get(calling_process(self._run))
        if mine is None:
            raise ValueError(NOT_INITIALIZED)
        return mine

    # ----- collectives ----------------------------------------------------------------------------------------

    def collective(self, name: str, group_key: str | None, agreed: tuple, data: bytes | None) -> bytes | None:
        """Rank's ``name`` on its group: enter, wait for every rank of the group to enter the same one, take this
        rank's outputs. ``agreed``: what every rank must pass alike (src, dst, op), src and dst as group ranks.
        None for a process that is not in the group (torch returns at once there)."""
        run = self._run
        world, rank = self._mine()
        group = world.groups.get(group_key or "WORLD")
        if group is None:
            raise ValueError(f"racecheck: unknown process group {group_key}")
        if rank not in group.ranks:
            return None
        index = group.ranks.index(rank)
        k = group.count[rank]
        group.count[rank] = k + 1
        what = f"{name} #{k} on {group.name} (rank {rank})"
        enter, wait = group.accesses(k, rank)
        run.schedule(f"enter {what}", access=enter)
        slot = group.slots.get(k)
        if slot is None:
            slot = group.slots[k] = Slot(len(group.ranks))
        slot.entries[index] = (name, agreed)
        slot.inputs[index] = data
        if slot.agreed():
            self._compute(name, dict(agreed), slot)
        run.schedule(f"wait {what}", access=wait, enabled=slot.done)
        slot.taken += 1
        if slot.taken == slot.size:
            del group.slots[k]
        if slot.error is not None:
            raise slot.error
        if name == "new_group":
            return pack(run, self._made(world, k, agreed))
        return slot.outputs[index]

    def _compute(self, name: str, agreed: dict, slot: Slot) -> None:
        run = self._run
        try:
            inputs = [unpack(run, slot.inputs[i]) or {} for i in range(slot.size)]
            slot.outputs = [pack(run, out) for out in compute(name, agreed, inputs)]
        except Exception as exc:  # noqa: BLE001 - every rank of the collective raises it
            slot.error = exc

    def _made(self, world: World, k: int, agreed: tuple) -> tuple[str, tuple[int, ...]]:
        """The group a ``new_group`` (the k-th collective on WORLD) made: the same key for every rank."""
        key = world.made.get(k)
        ranks = dict(agreed)["ranks"]
        if key is None:
            key = world.made[k] = f"group#{len(world.made) + 1}"
            world.groups[key] = Group(f"{world.prefix}{key}", ranks)
        return key, ranks

    # ----- point to point -------------------------------------------------------------------------------------

    def send(self, dst: int, tag: int, data: bytes) -> None:
        run = self._run
        world, rank = self._mine()
        if not 0 <= dst < world.size:
            raise ValueError(f"racecheck: send to rank {dst} of a world of {world.size}")
        run.schedule(f"send to rank {dst} tag {tag} (rank {rank})", access=on(world.inbox_objs[dst], PUT))
        world.inboxes[dst].setdefault((rank, tag), []).append(data)

    def recv(self, src: int | None, tag: int) -> tuple[int, bytes]:
        """The oldest message from ``src`` (any source: the lowest rank with one) with ``tag``."""
        run = self._run
        world, rank = self._mine()
        inbox = world.inboxes[rank]

        def source() -> int | None:
            ready = sorted(s for (s, t), queue in inbox.items() if queue and t == tag and src in (None, s))
            return ready[0] if ready else None

        origin = "any rank" if src is None else f"rank {src}"
        run.schedule(f"recv from {origin} tag {tag} (rank {rank})", access=on(world.inbox_objs[rank], GET),
                     enabled=lambda: source() is not None)
        sender = source()
        return sender, inbox[sender, tag].pop(0)
