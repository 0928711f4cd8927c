"""The runtime's vocabulary of what threads do: kinds of access, kinds of object, the objects, the accesses, the steps.

Built once, here, and handed as values to every consumer (the dependency relation, dpor, coverage, data races, the
racing pair, POS, sampling): nothing downstream parses an object's display text or reads an access by position.
Kinds are ``str``-valued enums, so tokens, JSON and reports keep the text they always printed (``Kind.READ`` is
``"read"``, hashes as ``"read"`` and formats as ``read``).

An ``Obj`` is interned: one instance per (kind, name, engine) in a process, so equality and hashing are identity
(the cheapest there is; the search's inner loops key dicts by object) and two steps that name one object name the
same instance. Its text (``str(obj)``) is what traces and reports have always shown (``file /racefs/a.ckpt``,
``thread T1``, ``Lock#2``). It pickles by value and is interned again on the other side, so an object that crosses a
process boundary is still the one object there.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

__racecheck_engine__ = True


class Kind(str, enum.Enum):
    """How a step touches an object. The dependency relation (``racecheck.runtime.relation``) says which pairs of
    kinds conflict on which kind of object; docs/dependency.md gives the reasons."""

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
    LIST = "list"  # a listing (a directory's, a container's entries as a whole): conflicts with every entry change
    ENTRY = "entry"  # a name appearing in or vanishing from a directory, an item changed in place: commute together
    START = "start"
    BEGIN = "begin"
    JOIN = "join"
    END = "end"
    CLOCK = "clock"  # a wait on virtual time
    # a shared object handed to code racecheck cannot see into and whose effect is not known (a C function, an
    # ``exclude=``d module): it may read or change any of it (``racecheck.control.handoff``)
    HANDOFF = "hand-off"

    # A kind is its text everywhere: in dicts next to plain strings, in f-strings, in JSON.
    __hash__ = str.__hash__
    __format__ = str.__format__

    def __str__(self) -> str:
        return self.value


class ObjKind(str, enum.Enum):
    """What an object is. The relation reads it for the wildcards (what each covers), for what orders steps for the
    data-race finder, for what a report calls an access; the racing pair reads it for FIFO queues and files."""

    LOCK = "lock"  # Lock, RLock (a condition's own lock names the condition: one object)
    SEMAPHORE = "semaphore"  # Semaphore, BoundedSemaphore
    CONDITION = "condition"  # Condition, a future's condition
    EVENT = "event"
    BARRIER = "barrier"
    QUEUE = "queue"  # LifoQueue, PriorityQueue: a get does not take the oldest item
    FIFO_QUEUE = "fifo queue"  # Queue, SimpleQueue, an executor's work queue: a get takes the oldest item
    THREAD = "thread"  # a thread's start, first step, join and end
    CLOCK = "clock"  # virtual time
    FAIRNESS = "fairness"  # the scheduler's fair scheduling: written by a step that ends in a yield, read by every step
    EXTERNAL = "external"  # a wait on another process: whatever it does, in any order
    FILE = "file"  # a file or directory as a name: its canonical path
    DIR = "dir"  # a directory's entries: its listing and the names appearing in or vanishing from it
    FS_STATE = "fs state"  # the fake filesystem's own counters: fault draws, temporary names
    ENGINE_STATE = "engine state"  # a stand-in's own plain state: an executor's idle count
    MEMORY = "memory"  # a named piece of plain memory: an attribute, an item, a container's entries, a global, a cell
    ANY_MEMORY = "any memory"  # memory the engine cannot name: a wildcard over every piece of memory
    ANYTHING = "anything"  # a bare ``racecheck.point()``: a wildcard over every object
    POINT = "point"  # ``racecheck.point(name, on=obj)`` on something that is no primitive: state, ordering nothing
    REST = "rest"  # what a thread that a failure cut short would still have done (the partial-order search's)

    __hash__ = str.__hash__
    __format__ = str.__format__

    def __str__(self) -> str:
        return self.value


# How an object of each kind is shown: ``prefix + name``.
_PREFIX = {ObjKind.FILE: "file ", ObjKind.DIR: "dir ", ObjKind.THREAD: "thread ", ObjKind.POINT: "on "}


class Obj:
    """One object a step touches: its kind, its name within the run (``Lock#2``, a canonical path, ``T1``,
    ``dict#2['k']``), and whether a stand-in keeps it for its own workings (``engine``: an executor's work queue,
    lock and idle count, a future's condition; the program never names it, and a report names a racing pair on it
    only when no pair on the program's own objects decides the failure). Interned: build one with ``Obj(kind,
    name)``; the same arguments give the same instance."""

    __slots__ = ("kind", "name", "engine", "text")
    _interned: dict[tuple[ObjKind, str, bool], Obj] = {}

    kind: ObjKind
    name: str
    engine: bool
    text: str

    def __new__(cls, kind: ObjKind, name: str, engine: bool = False) -> Obj:
        key = (kind, name, engine)
        found = cls._interned.get(key)
        if found is None:
            found = object.__new__(cls)
            object.__setattr__(found, "kind", kind)
            object.__setattr__(found, "name", name)
            object.__setattr__(found, "engine", engine)
            object.__setattr__(found, "text", _PREFIX.get(kind, "") + name)
            found = cls._interned.setdefault(key, found)
        return found

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("an Obj is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Obj, (self.kind, self.name, self.engine))

    def __copy__(self) -> Obj:
        return self

    def __deepcopy__(self, memo: dict) -> Obj:
        return self

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)

    def __repr__(self) -> str:
        return f"Obj({self.kind.name}, {self.name!r}{', engine' if self.engine else ''})"

    def __lt__(self, other: Obj) -> bool:
        """Objects sort by their text (as reports list them), the same in every process."""
        return self.text < other.text

    @property
    def is_memory(self) -> bool:
        """Plain memory: a named piece, or memory the engine could not name."""
        return self.kind is ObjKind.MEMORY or self.kind is ObjKind.ANY_MEMORY

    @property
    def is_file(self) -> bool:
        """A file's name or a directory's entries: what a report shows by its path."""
        return self.kind is ObjKind.FILE or self.kind is ObjKind.DIR


class Access(NamedTuple):
    """One object one step touches, and how. A NamedTuple: one is built at most steps, and tuples of them are
    compared and hashed by the search layer. ``path`` and ``parent``: a file operation's path and, for a namespace
    operation, its parent directory. ``blocking``: an acquire that cannot run while another thread holds the lock
    (a blocking acquire of a ``Lock`` or ``RLock``); a try-acquire, an acquire with a timeout and a semaphore's
    acquire can, and leave it False. ``via``: for an access made by code racecheck does not watch, the callee the
    watched code handed the object to (``json.dumps``), which a data-race report names. ``watched``: a blocking
    acquire made by code whose memory is watched (``racecheck.runtime.watched_code``), which dpor's lock-aware
    reduction may leave unordered (``racecheck.search.lock_aware``)."""

    obj: Obj
    kind: Kind
    path: str = ""
    parent: str = ""
    blocking: bool = False
    via: str = ""
    watched: bool = False


class Step(NamedTuple):
    """What one thread did from one scheduling point to its next: the trace event of its point, its number among
    the thread's steps (its identity in every schedule equivalent to this one), and everything it touched (its
    notes' accesses included)."""

    event: Any
    nth: int
    accesses: tuple[Access, ...]

    @property
    def tid(self) -> int:
        return self.event.tid


class Pending(NamedTuple):
    """What a thread of the run is about to do, or did last: the operation at its point, its source line, what
    that operation touches, how many points it has passed (its place among its own scheduling points), and its
    state: ``running`` (launched and not finished), ``finished``, ``not started``, or in a ``RunEnd`` ``waiting`` (it
    did not reach its end). ``runnable``: whether it
    could run at this moment (a running thread that waits on something that has not happened is not); None where
    it was not asked."""

    tid: int
    op: str
    loc: str
    access: tuple[Access, ...]
    points: int
    state: str
    runnable: bool | None


class Outcome(str, enum.Enum):
    """How a run ended: it passed, or the kind of its failure (the kinds ``FailureInfo`` names)."""

    PASSED = "passed"
    EXCEPTION = "exception"
    DEADLOCK = "deadlock"
    STEP_LIMIT = "step-limit"
    UNCONTROLLED_BLOCKING = "uncontrolled-blocking"
    DATA_RACE = "data-race"
    NONDETERMINISM = "nondeterminism"
    INTERNAL = "internal"
    DIVERGENCE = "divergence"
    CRASHED = "crashed"  # a simulated power loss stopped it (and recovery, if any, passed)

    __hash__ = str.__hash__
    __format__ = str.__format__

    def __str__(self) -> str:
        return self.value


class RunEnd(NamedTuple):
    """What a chooser and the run's sinks are told when the run has ended (``Chooser.end``, ``Sink.end``): the
    outcome, the run's step count and decisions (the thread picked at each, thread id + 1, or 0 for a value), its
    trace, what each thread that had not finished was about to do (the operation it waited in), ``taken`` its
    steps (``Step``, built once by the runtime: ``racecheck.runtime.sinks.StepLog``) and ``memory_steps`` the
    records of its plain memory accesses (``racecheck.runtime.memory_steps.MemorySteps``: where each joined access
    was made, real locks' takes and gives, a learning run's list); ``failed`` the thread its failure names
    (``FailureInfo.tid``; None: it passed, or its failure names no thread), for the interleaving key that reads a
    failing run up to that thread's last step (``racecheck.search.interleaving_sink``); ``touched`` what a sink that
    read every access saw touch each object (``racecheck.runtime.sinks.touched_by``), for a chooser, or None."""

    outcome: Outcome
    steps: int
    picked: Sequence[int]
    trace: Sequence[Any]  # the run's own list: it has ended, so nothing changes it; never change it either
    waiting: tuple[Pending, ...]
    taken: Sequence[Step] = ()
    memory_steps: Any = None
    failed: int | None = None
    touched: Any = None  # per object, the (thread, kind) pairs that touched it, when a sink read them all (``Sink``)
