"""What a scheduling step touches, as the primitive or fake-filesystem operation that emits it records it.

Every step of a run carries a tuple of ``Access`` values (``TraceEvent.access``; the types are those of
``racecheck.runtime.steps``): the object it touches (``Obj``: its kind and its logical name within the run: ``Lock#2``,
``file /racefs/a.ckpt``, ``dir /racefs``, ``thread T1``), the kind of access, and for files the path and, for
namespace operations, the parent directory. The dependency relation (``racecheck.runtime.relation``) decides from
these alone which steps commute; nothing reads an operation's display text to find out what it did, so rewording a
trace line changes no count, priority or exhaustion claim. This module builds the accesses the operations record
(memoised: every schedule makes the same few again).

A step is a thread's operation at a scheduling point and the code it runs until its next point; a note (a release,
a notify) adds its accesses to the step its thread is running (``racecheck.search.dependency.steps``).
"""

from __future__ import annotations

from functools import lru_cache

from racecheck.runtime.steps import Access, Kind, Obj, ObjKind

__racecheck_engine__ = True

__all__ = ["ACQUIRE", "ANYTHING", "ANYTHING_OBJ", "BEGIN", "CLOCK", "CLOCK_OBJ", "CREATE", "END", "ENTRY", "EXTERNAL",
           "EXTERNAL_OBJ", "FAIRNESS_OBJ", "FAIRNESS_READ", "GET", "JOIN", "LIST", "MEMORY", "MEMORY_OBJ", "NOTHING",
           "NOTIFY", "ON_CLOCK", "OPEN", "PUT", "READ", "RELEASE", "REMOVE", "RENAME", "START", "WAIT", "WRITE",
           "YIELDED", "Access", "Kind", "Obj", "ObjKind", "ancestors", "dir_obj", "exclusive_acquire", "file_access",
           "file_obj", "listing", "memory", "on", "on_thread", "thread_obj", "watched_acquire"]

# The kinds by their short names (the members of ``Kind``), as the operations that record them spell them.
READ = Kind.READ
WRITE = Kind.WRITE
ACQUIRE = Kind.ACQUIRE
RELEASE = Kind.RELEASE
WAIT = Kind.WAIT
NOTIFY = Kind.NOTIFY
PUT = Kind.PUT
GET = Kind.GET
CREATE = Kind.CREATE
REMOVE = Kind.REMOVE
RENAME = Kind.RENAME
OPEN = Kind.OPEN
LIST = Kind.LIST
ENTRY = Kind.ENTRY
START = Kind.START
BEGIN = Kind.BEGIN
JOIN = Kind.JOIN
END = Kind.END
CLOCK = Kind.CLOCK

# Memory the engine cannot name: a line point, an executor's work item, code between points that no watch saw. It
# conflicts with every memory access, and with itself.
MEMORY_OBJ = Obj(ObjKind.ANY_MEMORY, "memory")
MEMORY = (Access(MEMORY_OBJ, WRITE),)
# Anything at all: a bare ``racecheck.point()`` says only that the code around it touches shared state, which may be
# memory, a lock's state, a file; it conflicts with every access of every other step.
ANYTHING_OBJ = Obj(ObjKind.ANYTHING, "anything")
ANYTHING = (Access(ANYTHING_OBJ, WRITE),)
NOTHING: tuple[Access, ...] = ()
CLOCK_OBJ = Obj(ObjKind.CLOCK, "clock")
ON_CLOCK = (Access(CLOCK_OBJ, CLOCK),)  # a sleep, or a wait with a virtual deadline
EXTERNAL_OBJ = Obj(ObjKind.EXTERNAL, "external")
EXTERNAL = (Access(EXTERNAL_OBJ, WRITE),)  # a wait on another process: whatever it does, in any order
# Fair scheduling: a thread that yields is not scheduled again until the threads it yielded to have run, so the
# order of the step that ends in a yield and any other thread's step decides who may run next. That step writes
# the scheduler's fairness; every step reads it (the search layer adds the read: ``FAIRNESS_READ``).
FAIRNESS_OBJ = Obj(ObjKind.FAIRNESS, "fairness")
YIELDED = (Access(FAIRNESS_OBJ, WRITE),)
FAIRNESS_READ = Access(FAIRNESS_OBJ, READ)


def memory(name: str) -> Obj:
    """A named piece of plain memory (``racecheck.control.memory_names``): an attribute (``Counter#1.value``), an
    item (``dict#2['k']``), a container's entries (``list#3``), a module global (``global pkg.mod.x``), a closure
    cell (``cell make.<locals>.count#1``)."""
    return Obj(ObjKind.MEMORY, name)


def exclusive_acquire(obj: Obj) -> tuple[Access, ...]:
    """A blocking acquire of exclusive lock ``obj`` (a ``Lock`` or ``RLock``): it cannot run while another thread
    holds the lock, so dpor need not try it at a decision where the lock was held
    (``racecheck.search.analysis.Analysis.blocked_since``). A try-acquire, an acquire with a timeout (which can
    return False there) and a semaphore's acquire (which another holder need not block) record a plain acquire."""
    return (Access(obj, ACQUIRE, blocking=True),)


def watched_acquire(obj: Obj) -> tuple[Access, ...]:
    """``exclusive_acquire`` made by code whose memory is watched: what its critical section shares is in its steps'
    accesses, so dpor need not order it against other such acquires by itself (``racecheck.search.lock_aware``)."""
    return (Access(obj, ACQUIRE, blocking=True, watched=True),)


@lru_cache(maxsize=1 << 12)
def on(obj: Obj, kind: Kind) -> tuple[Access, ...]:
    """A step that touches one object. (Memoised: every schedule makes the same few objects again, so a primitive's
    accesses cost a lookup rather than building tuples.)"""
    return (Access(obj, kind),)


def thread_obj(tid: int) -> Obj:
    """The object a thread's start, first step, join and end touch."""
    return Obj(ObjKind.THREAD, f"T{tid}")


@lru_cache(maxsize=1 << 10)
def on_thread(tid: int, kind: Kind) -> tuple[Access, ...]:
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


def file_obj(path: str) -> Obj:
    """A file or directory as a name: its canonical path."""
    return Obj(ObjKind.FILE, path)


def dir_obj(path: str) -> Obj:
    """A directory's entries: its listing, and the names appearing in or vanishing from it."""
    return Obj(ObjKind.DIR, path)


@lru_cache(maxsize=1 << 14)
def file_access(kind: Kind, path: str, namespace: bool = False, root: str = "/") -> tuple[Access, ...]:
    """A file operation on ``path`` (the file's identity: a canonical path). Its lookup reads every directory
    above it (so removing or renaming one of them conflicts with it); a namespace operation (a name appears or
    vanishes) also touches its parent's entries, which commutes with other names' changes there but conflicts
    with a listing. (Memoised: a pure function, and every schedule repeats the same few paths.)"""
    walk = tuple(Access(file_obj(d), READ, d) for d in ancestors(path, root))
    found = Access(file_obj(path), kind, path)
    if not namespace:
        return (*walk, found)
    parent = _parent(path)
    return (*walk, found._replace(parent=parent), Access(dir_obj(parent), ENTRY, path, parent))


@lru_cache(maxsize=1 << 12)
def listing(path: str) -> tuple[Access, ...]:
    """A listing of directory ``path`` (listdir, scandir, walk's steps; ``stat``, whose link count and times
    follow the entries, reads it too)."""
    return (Access(dir_obj(path.rstrip('/') or '/'), LIST, path),)
