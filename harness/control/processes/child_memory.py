"""Plain memory in a child, watched as in the parent: the same rewritten code and hooks (inherited by a forked
child, installed in a spawned one), the child's own ``Watch`` naming the objects its threads meet, and every
access a request its thread's proxy makes in the parent's run (``run.memory`` and its kin), so a race between two
threads of one child on plain memory is found, reported and replayed as one between two threads of the parent.

A child's memory is its own (a forked child has a copy of the parent's, a spawned one none of it): the names its
accesses carry are put under the process's label in the parent (``P1.dict#1``, ``P1.global mod.x``), so they
never meet the parent's or another child's objects of the same name.
"""

from __future__ import annotations

from typing import Any

from racecheck import runtime
from racecheck.control.memory_names import Watch
from racecheck.control.processes import inherited, link
from racecheck.control.processes.link import registry_of
from racecheck.runtime.steps import Access, Obj

__racecheck_engine__ = True

KINDS = (*link.MEMORY, "merges")
# Whether the one thread of the run left in a child makes its plain memory accesses without points (``private``),
# as the parent tells each child it starts (``children``): on by default; off only to measure what it saves
# (``benchmarks/bench_ranks.py --cut``). A token replays only with the setting it was found with.
LONE_CUT = True
# Objects whose memory another process may map too: a real ``mmap`` and views of buffers (a ``memoryview`` of one
# or of a segment the child attached): their accesses stay points. The prefixes of their names (``Watch``).
SHARED_PREFIXES = ("mmap#", "mmap@", "memoryview#", "memoryview@")
ONE_WAY = ("replace_memory", "merge_memory", "atomic", "merges")


def private(access: tuple[Access, ...]) -> bool:
    """Whether ``access`` touches only memory of the child's own, which no other process reaches: then, while one
    thread of the run is left in the child, no other thread can touch it before that thread's next point, and the
    access joins its running step (its place in the trace and the data race finder unchanged) instead of making a
    point of its own. Why this loses no interleaving: docs/control.md, "A child's lone thread"."""
    for one in access:
        if one.obj.name.startswith(SHARED_PREFIXES):
            return False
    return True


def under(label: str, access: tuple[Access, ...]) -> tuple[Access, ...]:
    """``access`` with its plain memory named under process ``label``."""
    return tuple(one._replace(obj=Obj(one.obj.kind, f"{label}.{one.obj.name}", one.obj.engine))
                 if one.obj.is_memory else one for one in access)


def serve(run: Any, message: tuple, at_line: Any) -> Any:
    """In the parent, on the proxy of the child's thread: the memory access it reported, made in the run."""
    kind = message[0]
    if kind == "merges":  # the accesses that joined the running step since the child's last message
        for merged in message[1]:
            serve(run, merged, at_line)
        return None
    label = registry_of(run).process_of[runtime.current_thread_record().tid]
    if kind == "real_lock":  # a real lock taken or given, in order with the accesses merged around it
        return inherited.serve_real_lock(run, label, message)
    if kind == "atomic":
        return run.memory_steps.atomic_addition()
    if kind == "replace_memory":
        return run.replace_memory(under(label, message[1]))
    _, op, access, line, shown = message
    access = under(label, access)
    if kind == "memory":
        call = lambda: run.memory(op, access, 0, shown)  # noqa: E731
    elif kind == "memory_point":
        call = lambda: run.memory_point(op, access, 0, shown)  # noqa: E731
    else:
        call = lambda: run.merge_memory(access)  # noqa: E731
    value = at_line(line)(call, (), {}) if line else call()
    if kind == "merge_memory":
        return value
    # and whether the thread now runs alone, which holds until the child sends anything but memory (``link``)
    return value, run.alone is runtime.current_thread_record()


class ChildWatch(Watch):
    """The child's ``Watch``: its first thread names objects as a process's first thread does (``dict#1``; under
    the label, ``P1.dict#1``), its other threads as threads do (``dict@T3#1``): ``Watch``'s ``home`` thread."""

    __slots__ = ()


class ChildSteps:
    """What the memory hooks ask of ``run.memory_steps`` in a child."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def atomic_addition(self) -> None:
        self.run.tell("atomic")
