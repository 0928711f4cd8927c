"""The dependency relation, in one place: which accesses of two threads conflict, and what follows from it.

Every consumer reads this module and nothing else for these facts: the partial-order search and its analysis,
``result.interleavings``, the racing pair and its isolation check, POS's priorities, sampling, and the data-race
finder. What it owns:

* **Order** (``Relation.order``): for a later access of kind ``k2`` to an object of kind ``o`` after an earlier one
  of kind ``k1``, whether the two commute, conflict in one order only (a thread's start before its first step, its
  end before a join on it: they order steps, never race), or conflict either way (a race when nothing else orders
  them). A total table over Kind x Kind x ObjKind, built from ``ROWS``: each row a reason a person can read
  (docs/dependency.md's table is these rows), the first row that covers a combination deciding it; a relation
  whose rows leave a combination out cannot be built.
* **Refinements** (``Relation.looks_below``, ``Relation.fifo_commutes``): the two rules the table cannot express,
  since they read more than two kinds and an object's kind (paths, the queue's order), each a typed row
  (``Refinement``, ``REFINEMENTS``): a name made or removed and a lookup below it; a put and a get of a first-in
  first-out queue where the get took an item queued before that put. They tell the racing pair's isolation check
  which conflicting steps a swap did not really reorder (``racecheck.search.race_order``).
* **Wildcards** (``Relation.covers``): a bare ``racecheck.point()`` conflicts with every object, memory the engine
  could not name with every piece of memory, whatever the kinds.
* **Synchronisation for data races** (``Relation.role``, ``Relation.publishes``): which objects order the accesses
  around them (locks, queues, events, threads: their operations carry vector clocks), which hold data whose
  unordered conflicting accesses are data races (plain memory, files), which are neither (the clock, fairness,
  the wildcards, the fake filesystem's counters).
* **Words** (``Relation.word``, ``shown``, ``most_specific``, ``report_rank``): what a report calls an access, an
  object, and which object names a pair.

A test that plants a bug builds a ``Relation`` from other rows and puts it in force with ``planted``; the consumers
read ``active()`` where their work starts (an analysis, an interleaving key, one call of a dependency function),
never inside a loop over accesses.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from racecheck.runtime.steps import Access, Kind, Obj, ObjKind

__racecheck_engine__ = True


class Order(enum.IntEnum):
    """How a later access meets an earlier one on one object."""

    COMMUTE = 0
    ONE_WAY = 1  # conflict, but the other order cannot happen
    REVERSIBLE = 2  # conflict, and the other order could happen: a race when nothing else orders them


class Role(enum.IntEnum):
    """What an object is to the data-race finder."""

    IGNORED = 0  # orders nothing and holds no program data: the clock, fairness, wildcards, the fs's counters
    SYNC = 1  # its operations order what comes before and after them (vector clocks)
    DATA = 2  # unordered conflicting accesses to it are data races: plain memory, files


ALL_KINDS = frozenset(Kind)
ALL_OBJECTS = frozenset(ObjKind)
LOOKS = frozenset({Kind.READ, Kind.LIST})


class Row(NamedTuple):
    """One row of the relation: an earlier access of a kind in ``earlier`` and a later one of a kind in ``later``,
    on an object of a kind in ``objects``, meet as ``order``, for ``reason``."""

    earlier: frozenset[Kind]
    later: frozenset[Kind]
    objects: frozenset[ObjKind]
    order: Order
    pair: str  # how docs/dependency.md names the pair
    reason: str


def commute(a: Kind, b: Kind, why: str = "planted") -> tuple[Row, Row]:
    """Rows that make ``a`` and ``b`` commute on every object, in either order (``Relation.with_rows``)."""
    one, other = frozenset({a}), frozenset({b})
    return (Row(one, other, ALL_OBJECTS, Order.COMMUTE, f"{a.value} then {b.value}", why),
            Row(other, one, ALL_OBJECTS, Order.COMMUTE, f"{b.value} then {a.value}", why))


HANDING = frozenset({Kind.HANDOFF})

ROWS: tuple[Row, ...] = (
    Row(HANDING, ALL_KINDS, ALL_OBJECTS, Order.REVERSIBLE,
        "a hand-off to code racecheck cannot see into, then anything (`hand-off`)",
        "the callee may have read or changed any piece of the object it was handed"),
    Row(ALL_KINDS, HANDING, ALL_OBJECTS, Order.REVERSIBLE,
        "anything, then a hand-off to code racecheck cannot see into (`hand-off`)",
        "the callee may read or change any piece of the object it is handed"),
    Row(LOOKS, LOOKS, ALL_OBJECTS, Order.COMMUTE, "two reads (or listings) of one object",
        "neither changes what the other sees"),
    Row(frozenset({Kind.ENTRY}), frozenset({Kind.ENTRY}), ALL_OBJECTS, Order.COMMUTE,
        "two name changes in one directory, two in-place changes of a container's items (`entry`)",
        "each also touches its own file or item; two changes of one name or item still conflict there"),
    Row(frozenset({Kind.BEGIN}), frozenset({Kind.JOIN}), ALL_OBJECTS, Order.COMMUTE,
        "a thread's first step and a `join` on it", "the join needs the end, which comes after anyway"),
    Row(frozenset({Kind.JOIN}), frozenset({Kind.BEGIN}), ALL_OBJECTS, Order.COMMUTE,
        "a `join` on a thread and its first step", "the join needs the end, which comes after anyway"),
    Row(frozenset({Kind.START}), frozenset({Kind.BEGIN}), ALL_OBJECTS, Order.ONE_WAY,
        "a thread's `start` and its first step", "they order steps but never race: the other order cannot happen"),
    Row(frozenset({Kind.END}), frozenset({Kind.JOIN}), ALL_OBJECTS, Order.ONE_WAY,
        "a thread's end and a `join` on it", "they order steps but never race: the other order cannot happen"),
    Row(ALL_KINDS, ALL_KINDS, ALL_OBJECTS, Order.REVERSIBLE,
        "any other pair on one object: a lock, queue, event, condition, future, barrier, a piece of memory, a file",
        "acquire/acquire decide who gets it, put/get what is got, set/wait and notify/wait who wakes; a write "
        "decides what a read sees and which write wins; a name change changes a listing"),
)



class Refinement(NamedTuple):
    """A rule the table over (Kind, Kind, ObjKind) cannot express: two steps that the table says conflict on an
    object of a kind in ``objects`` commute all the same where every access of one to the object is of a kind in
    ``first``, every access of the other of a kind in ``second``, and what the rule reads beyond the kinds holds
    (``name`` says which: ``"below"``, paths; ``"fifo"``, the queue's order)."""

    name: str
    objects: frozenset[ObjKind]
    first: frozenset[Kind]
    second: frozenset[Kind]
    pair: str
    reason: str


BELOW = Refinement("below", frozenset({ObjKind.FILE}), frozenset({Kind.CREATE, Kind.REMOVE}), LOOKS,
                   "a name made or removed (`mkdir d`, `rmdir d`, a file created or deleted), and a step that only "
                   "looks below it (`stat d/a`)",
                   "a new directory is empty and `rmdir` only removes an empty one: the lookup finds nothing below "
                   "it in either order")
FIFO = Refinement("fifo", frozenset({ObjKind.FIFO_QUEUE}), frozenset({Kind.PUT}), frozenset({Kind.GET}),
                  "a put on a first-in first-out queue, and a get that takes an item queued before that put",
                  "the get takes the same item and the queue ends the same in either order (an executor's sentinel "
                  "put by `shutdown` and its worker's get of an earlier work item)")
REFINEMENTS: tuple[Refinement, ...] = (BELOW, FIFO)

# What each wildcard kind of object conflicts with, whatever the kinds: every object, or every piece of memory.
WILDCARDS: dict[ObjKind, frozenset[ObjKind]] = {
    ObjKind.ANYTHING: ALL_OBJECTS,
    ObjKind.ANY_MEMORY: frozenset({ObjKind.MEMORY, ObjKind.ANY_MEMORY}),
}

ROLES: dict[ObjKind, Role] = {
    **dict.fromkeys((ObjKind.LOCK, ObjKind.SEMAPHORE, ObjKind.CONDITION, ObjKind.EVENT, ObjKind.BARRIER,
                     ObjKind.QUEUE, ObjKind.FIFO_QUEUE, ObjKind.THREAD, ObjKind.ENGINE_STATE), Role.SYNC),
    **dict.fromkeys((ObjKind.MEMORY, ObjKind.FILE, ObjKind.DIR), Role.DATA),
    **dict.fromkeys((ObjKind.CLOCK, ObjKind.FAIRNESS, ObjKind.EXTERNAL, ObjKind.FS_STATE, ObjKind.ANY_MEMORY,
                     ObjKind.ANYTHING, ObjKind.POINT, ObjKind.REST), Role.IGNORED),
}
# On a synchronising object, these kinds only take what earlier operations published (a read, a wait, a join, a
# thread's first step); every other kind publishes the thread's clock too.
TAKE_ONLY = frozenset({Kind.READ, Kind.WAIT, Kind.JOIN, Kind.BEGIN})
# Kinds that change nothing of their object another thread could see (a look, taking what was published, the clock,
# an open): the racing pair ranks a pair of two such steps last (``racecheck.search.race_candidates``).
UNCHANGING = LOOKS | TAKE_ONLY | frozenset({Kind.CLOCK, Kind.OPEN})

_WORDS = {Kind.READ: "read", Kind.WRITE: "write", Kind.LIST: "read all of", Kind.ENTRY: "add/remove an entry of",
          Kind.CREATE: "create", Kind.REMOVE: "remove", Kind.RENAME: "rename", Kind.OPEN: "open",
          Kind.HANDOFF: "hand off"}
_FILE_WORDS = {Kind.READ: "read", Kind.WRITE: "write", Kind.LIST: "list", Kind.ENTRY: "change an entry of"}


class Relation:
    """The relation built from ``rows`` (see the module docstring); ``wildcards`` and ``roles`` as ``WILDCARDS`` and
    ``ROLES``. Lookups are dicts built once: the search's inner loops read ``order_rows``/``conflict_rows``."""

    def __init__(self, rows: Iterable[Row] = ROWS, wildcards: dict[ObjKind, frozenset[ObjKind]] | None = None,
                 roles: dict[ObjKind, Role] | None = None, take_only: frozenset[Kind] = TAKE_ONLY,
                 refinements: Iterable[Refinement] = REFINEMENTS) -> None:
        self.rows = tuple(rows)
        self.refinements = tuple(refinements)
        self.refined: dict[str, Refinement] = {rule.name: rule for rule in self.refinements}
        fifo = self.refined.get("fifo")
        # the kinds of object whose puts and gets ``fifo_commutes`` reads in order (none: the rule is not in force)
        self.fifo_objects: frozenset[ObjKind] = fifo.objects if fifo is not None else frozenset()
        self.wildcards = dict(WILDCARDS if wildcards is None else wildcards)
        self.roles = dict(ROLES if roles is None else roles)
        self.take_only = take_only
        missing_roles = ALL_OBJECTS - set(self.roles)
        if missing_roles:
            raise ValueError(f"no data-race role for {sorted(missing_roles)}")
        self.table: dict[tuple[Kind, Kind, ObjKind], Order] = {}
        self.source: dict[tuple[Kind, Kind, ObjKind], Row] = {}
        for obj_kind in ObjKind:
            for earlier in Kind:
                for later in Kind:
                    row = next((r for r in self.rows if earlier in r.earlier and later in r.later
                                and obj_kind in r.objects), None)
                    if row is None:
                        raise ValueError(f"the relation has no row for {earlier.value} then {later.value} on "
                                         f"{obj_kind.value}")
                    self.table[(later, earlier, obj_kind)] = row.order
                    self.source[(later, earlier, obj_kind)] = row
        # object kind -> later kind -> earlier kind -> Order: what the analysis's inner loop reads per access
        self.order_rows: dict[ObjKind, dict[Kind, dict[Kind, Order]]] = {
            o: {b: {a: self.table[(b, a, o)] for a in Kind} for b in Kind} for o in ObjKind}
        # object kind -> (earlier kind, later kind) -> conflict (either order)
        self.conflict_rows: dict[ObjKind, dict[tuple[Kind, Kind], bool]] = {
            o: {(a, b): bool(self.table[(b, a, o)]) for a in Kind for b in Kind} for o in ObjKind}
        # later kind -> the object kinds on which it conflicts with every earlier kind either way
        self.reorders_all: dict[ObjKind, frozenset[Kind]] = {
            o: frozenset(b for b in Kind if all(self.table[(b, a, o)] == Order.REVERSIBLE for a in Kind))
            for o in ObjKind}
        self._groups: dict[frozenset[Kind], frozenset[Kind]] = {}
        self.runs: dict[ObjKind, dict[Kind, frozenset[Kind]]] = {o: self._runs(o) for o in ObjKind}
        self.covered: dict[ObjKind, frozenset[ObjKind]] = {o: frozenset() for o in ObjKind}
        for wild, objects in self.wildcards.items():
            self.covered[wild] = objects

    def with_rows(self, *rows: Row) -> Relation:
        """This relation with ``rows`` put first (they decide what they cover): how a test plants a bug."""
        return Relation((*rows, *self.rows), self.wildcards, self.roles, self.take_only, self.refinements)

    def without_refinements(self) -> Relation:
        """This relation with no refinement in force: how a test plants a bug in them."""
        return Relation(self.rows, self.wildcards, self.roles, self.take_only, ())

    # ----- conflicts --------------------------------------------------------------------------------------------

    def order(self, later: Kind, earlier: Kind, on: ObjKind) -> Order:
        return self.table[(later, earlier, on)]

    def covers(self, wild: Obj, other: Obj) -> bool:
        """Whether ``wild`` is a wildcard that conflicts with ``other`` (a different object) whatever the kinds."""
        return other.kind in self.covered[wild.kind]

    def wildcard_conflict(self, a: Obj, b: Obj) -> bool:
        """Two different objects that conflict all the same: one a wildcard covering the other."""
        return b.kind in self.covered[a.kind] or a.kind in self.covered[b.kind]

    def is_wildcard(self, obj: Obj) -> bool:
        return obj.kind in self.wildcards

    def conflict(self, a: Access, b: Access) -> bool:
        """Two accesses by different threads conflict: one object, kinds that do not commute there; or one of them
        is a wildcard that covers the other."""
        if a.obj is not b.obj:
            return self.wildcard_conflict(a.obj, b.obj)
        return self.conflict_rows[a.obj.kind][(a.kind, b.kind)]

    def commuting_run(self, kind: Kind, on: ObjKind) -> frozenset[Kind] | None:
        """The kinds that commute with ``kind`` and with each other on an object of kind ``on`` (None: ``kind``
        commutes with nothing there, not even itself): an interleaving's identity takes a run of such accesses to
        one object as a set. The same frozenset object for every kind of a group (callers compare groups by
        identity)."""
        return self.runs[on].get(kind)

    def _runs(self, on: ObjKind) -> dict[Kind, frozenset[Kind]]:
        out: dict[Kind, frozenset[Kind]] = {}
        for kind in Kind:
            group = frozenset(k for k in Kind if self.table[(kind, k, on)] == Order.COMMUTE
                              and self.table[(k, kind, on)] == Order.COMMUTE)
            if kind in group and all(self.table[(a, b, on)] == Order.COMMUTE for a in group for b in group):
                out[kind] = self._groups.setdefault(group, group)
        return out

    # ----- refinements -------------------------------------------------------------------------------------------

    def looks_below(self, made: tuple[Access, ...], looker: tuple[Access, ...], obj: Obj) -> bool:
        """Whether step ``made`` only makes or removes the name ``obj`` and step ``looker`` only reads ``obj`` on the
        way to a path below it, finding nothing there in either order (``BELOW``)."""
        rule = self.refined.get("below")
        if rule is None or obj.kind not in rule.objects:
            return False
        mine = [a for a in made if a.obj is obj]
        if not mine or any(a.kind not in rule.first for a in mine):
            return False
        top = mine[0].path
        if not top:
            return False
        below = [a for a in looker if a.path.startswith(top.rstrip("/") + "/")]
        at = [a for a in looker if a.path == top]
        return bool(below) and all(a.kind == Kind.READ for a in at) and all(a.kind in rule.second for a in below)

    def fifo_commutes(self, obj: Obj, put: tuple[Access, ...], get: tuple[Access, ...], item: int, puts: int) -> bool:
        """Whether step ``put`` (only puts on ``obj``) and step ``get`` (only gets from it) commute on FIFO queue
        ``obj``: the get took item number ``item`` (the gets before it), and ``puts`` items were put before the put
        (or before the get, where the get ran first), so the item came from an earlier put (``FIFO``)."""
        rule = self.refined.get("fifo")
        if rule is None or obj.kind not in rule.objects:
            return False
        if any(a.kind not in rule.first for a in put if a.obj is obj) or any(
                a.kind not in rule.second for a in get if a.obj is obj):
            return False
        return item < puts

    # ----- data races -------------------------------------------------------------------------------------------

    def role(self, obj: Obj) -> Role:
        return self.roles[obj.kind]

    def publishes(self, kind: Kind) -> bool:
        """On a synchronising object, whether an access of ``kind`` publishes its thread's clock (else it only takes
        what was published: a read, a wait, a join, a first step)."""
        return kind not in self.take_only

    # ----- words ------------------------------------------------------------------------------------------------

    @staticmethod
    def word(obj: Obj, kind: Kind) -> str:
        """How a report names an access of ``kind`` to ``obj``."""
        words = _FILE_WORDS if obj.is_file else _WORDS
        return words.get(kind, str(kind))


def shown(obj: Obj) -> str:
    """How a report names an object: a file or directory by its path, unresolved memory as shared memory, a bare
    point's wildcard as shared state, anything else by its name."""
    if obj.kind is ObjKind.ANY_MEMORY:
        return "shared memory"
    if obj.kind is ObjKind.ANYTHING:
        return "shared state"
    return obj.name if obj.is_file and obj.name else obj.text


def most_specific(objs: Iterable[Obj]) -> Obj:
    """Of the objects two steps conflict on, the one a report names: a file before a directory's entries, the
    deepest path first (an ancestor only read on the way), otherwise in name order."""
    return min(objs, key=lambda obj: (obj.kind is ObjKind.DIR, -len(obj.name) if obj.kind is ObjKind.FILE else 0,
                                      obj.text))


PROGRAM, UNNAMED, ENGINE = 0, 1, 2  # ranks of a racing pair's object: tried, and preferred, in this order


def report_rank(obj: Obj) -> int:
    """How a report ranks a pair on ``obj``: the program's objects, unnamed memory, the engine's bookkeeping."""
    if obj.engine or obj.kind is ObjKind.FAIRNESS:
        return ENGINE
    if obj.kind is ObjKind.ANY_MEMORY or obj.kind is ObjKind.ANYTHING:
        return UNNAMED
    return PROGRAM


RELATION = Relation()
_active = [RELATION]


def active() -> Relation:
    """The relation in force: ``RELATION`` unless a test planted another."""
    return _active[-1]


@contextmanager
def planted(relation: Relation) -> Iterator[Relation]:
    """Put ``relation`` in force for the block (tests plant bugs this way)."""
    _active.append(relation)
    try:
        yield relation
    finally:
        _active.pop()
