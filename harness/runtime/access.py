"""What a scheduling step touches, recorded by the primitive or fake-filesystem operation that emits it.

Every step of a run carries a tuple of ``Access`` values (``TraceEvent.access``): the object it touches (by its
logical identity within the run: ``Lock#2``, ``file /racefs/a.ckpt``, ``dir /racefs``, ``thread T1``), the kind of
access, and for files the path and, for namespace operations, the parent directory. The search layer decides from
these alone which steps commute (``racecheck.search.dependency``); nothing reads an operation's display text to
find out what it did, so rewording a trace line changes no count, priority or exhaustion claim.

A step is a thread's operation at a scheduling point and the code it runs until its next point; a note (a release,
a notify) adds its accesses to the step its thread is running (``racecheck.search.dependency.steps``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

__racecheck_engine__ = True


class Access(NamedTuple):
    """One object one step touches, and how. A NamedTuple: one is built at most steps, and tuples of them are
    compared and hashed by the search layer."""

    obj: str
    kind: str
    path: str = ""
    parent: str = ""


# The kinds, grouped as the dependency relation reads them (docs/dependency.md gives the reasons).
READ = "read"  # looks without changing: is_set, qsize, empty, full, stat, exists, read, fsync, a lookup
WRITE = "write"
ACQUIRE = "acquire"
RELEASE = "release"
WAIT = "wait"
NOTIFY = "notify"
PUT = "put"
GET = "get"
CREATE = "create"
REMOVE = "remove"
RENAME = "rename"
OPEN = "open"
LIST = "list"  # a directory's listing: conflicts with every change of its entries
ENTRY = "entry"  # a name appearing in or vanishing from a directory: commutes with other entries' changes
START = "start"
BEGIN = "begin"
JOIN = "join"
END = "end"
CLOCK = "clock"  # a wait on virtual time

KINDS = frozenset({READ, WRITE, ACQUIRE, RELEASE, WAIT, NOTIFY, PUT, GET, CREATE, REMOVE, RENAME, OPEN, LIST, ENTRY,
                   START, BEGIN, JOIN, END, CLOCK})



class MemObj(str):
    """The name of a piece of plain memory a step read or wrote (``racecheck.control.memory_names``): an attribute
    (``Counter#1.value``), an item (``dict#2['k']``), a container's entries (``list#3``), a module global
    (``global pkg.mod.x``), a closure cell (``cell make.<locals>.count#1``). A ``str`` to everything that compares or
    prints objects; its type tells the dependency relation that it is memory, which an unresolved access
    (``MEMORY``) conflicts with."""

    __slots__ = ()


# Memory the engine cannot name: a line point, an executor's work item, code between points that no watch saw. It
# conflicts with every memory access (every ``MemObj``), and with itself.
MEMORY_OBJ = MemObj("memory")
MEMORY = (Access(MEMORY_OBJ, WRITE),)
# Anything at all: a bare ``racecheck.point()`` says only that the code around it touches shared state, which may be
# memory, a lock's state, a file; it conflicts with every access of every other step.
ANYTHING_OBJ = "anything"
ANYTHING = (Access(ANYTHING_OBJ, WRITE),)
NOTHING: tuple[Access, ...] = ()


class EngineObj(str):
    """The name of an object a stand-in keeps for its own workings, which the program never names: an executor's
    work queue, lock and idle count, a future's condition. Conflicts on it order steps like any other; a report
    names a racing pair on it only when no pair on the program's own objects decides the failure."""

    __slots__ = ()


class FifoObj(str):
    """The name of a first-in first-out queue (``SimpleQueue``, ``Queue``, an executor's work queue): a get takes the
    oldest item, so a put and a get that each find the other's order free (the get takes an item queued earlier)
    do the same in either order. The racing pair reads this (``racecheck.search.race_order``)."""

    __slots__ = ()


class EngineFifoObj(EngineObj, FifoObj):
    """A first-in first-out queue a stand-in keeps for itself (an executor's work queue)."""

    __slots__ = ()


class ExclusiveObj(str):
    """The name of a lock only one thread holds at a time (``Lock``, ``RLock``), as its *blocking* acquire names it:
    that acquire cannot run while another thread holds the lock, so dpor need not try it at a decision where the
    lock was held (``racecheck.search.analysis.Analysis.blocked_since``). A try-acquire, an acquire with a timeout
    (which can return False there) and a semaphore's acquire (which another holder need not block) name their
    object plainly. Equal to the plain name, so the dependency relation sees one object."""

    __slots__ = ()


class EngineExclusiveObj(EngineObj, ExclusiveObj):
    """A stand-in's own exclusive lock (an executor's shutdown lock)."""

    __slots__ = ()


def exclusive_acquire(obj: str) -> tuple[Access, ...]:
    """A blocking acquire of exclusive lock ``obj`` (not memoised through ``on``, whose cache would hand back the
    plain name's tuple for an equal string)."""
    marked = EngineExclusiveObj(obj) if isinstance(obj, EngineObj) else ExclusiveObj(obj)
    return (Access(marked, ACQUIRE),)


def is_memory(obj: str) -> bool:
    """Whether an access's object is plain memory (a named piece of it, or ``MEMORY``)."""
    return type(obj) is MemObj
CLOCK_OBJ = "clock"
ON_CLOCK = (Access(CLOCK_OBJ, CLOCK),)  # a sleep, or a wait with a virtual deadline
EXTERNAL = (Access("external", WRITE),)  # a wait on another process: whatever it does, in any order
# Fair scheduling: a thread that yields is not scheduled again until the threads it yielded to have run, so the
# order of the step that ends in a yield and any other thread's step decides who may run next. That step writes
# the scheduler's fairness; every step reads it (the search layer adds the read: ``FAIRNESS_READ``).
FAIRNESS_OBJ = "fairness"
YIELDED = (Access(FAIRNESS_OBJ, WRITE),)
FAIRNESS_READ = Access(FAIRNESS_OBJ, READ)


@lru_cache(maxsize=1 << 12)
def on(obj: str, kind: str) -> tuple[Access, ...]:
    """A step that touches one object. (Memoised: every schedule makes the same few objects again, so a primitive's
    accesses cost a lookup rather than building tuples.)"""
    return (Access(obj, kind),)


def thread_obj(tid: int) -> str:
    """The object a thread's start, first step, join and end touch."""
    return f"thread T{tid}"


@lru_cache(maxsize=1 << 10)
def on_thread(tid: int, kind: str) -> tuple[Access, ...]:
    """A step that touches thread ``tid`` (memoised, as ``on``)."""
    return (Access(thread_obj(tid), kind),)


def _parent(path: str) -> str:
    head = path.rstrip("/\\").rsplit("/", 1)[0]
    return head or "/"


def ancestors(path: str, root: str = "/") -> list[str]:
    """The directories a lookup of ``path`` walks through, outermost first, below ``root``."""
    found = []
    parent = _parent(path)
    while parent != path and len(parent) > len(root.rstrip("/")):
        found.append(parent)
        path, parent = parent, _parent(parent)
    return found[::-1]


@lru_cache(maxsize=1 << 14)
def file_access(kind: str, path: str, namespace: bool = False, root: str = "/") -> tuple[Access, ...]:
    """A file operation on ``path`` (the file's identity: a canonical path). Its lookup reads every directory
    above it (so removing or renaming one of them conflicts with it); a namespace operation (a name appears or
    vanishes) also touches its parent's entries, which commutes with other names' changes there but conflicts
    with a listing. (Memoised: a pure function, and every schedule repeats the same few paths.)"""
    walk = tuple(Access(f"file {d}", READ, d) for d in ancestors(path, root))
    found = Access(f"file {path}", kind, path)
    if not namespace:
        return (*walk, found)
    parent = _parent(path)
    return (*walk, found._replace(parent=parent), Access(f"dir {parent}", ENTRY, path, parent))


@lru_cache(maxsize=1 << 12)
def listing(path: str) -> tuple[Access, ...]:
    """A listing of directory ``path`` (listdir, scandir, walk's steps; ``stat``, whose link count and times
    follow the entries, reads it too)."""
    return (Access(f"dir {path.rstrip('/') or '/'}", LIST, path),)
