"""Coverage of an exploration: distinct interleavings, duplicate schedules, and a small space seen to its end.

Two schedules that differ only in the order of steps that commute (``racecheck.search.dependency``: two threads
touching different objects, or both only reading one) are the same interleaving: they cannot behave differently.
An interleaving is therefore identified by, for every object, the order in which steps accessed it, a run of
mutually commuting accesses (reads, listings, a directory's entry changes) taken as a set: Mazurkiewicz's
equivalence, read from the accesses every step recorded. A step is named by its thread and its number within
that thread, the same in every equivalent schedule. ``result.interleavings`` counts the distinct ones, for every
strategy; dpor explores one schedule per interleaving. Plain memory touched between scheduling points is not seen,
except where a ``racecheck.point`` marks it.

Random walk and PCT draw schedules independently, so on a small program they repeat themselves. ``ChoiceTree``
remembers every executed choice sequence as a path in a tree (each node knows how many options its decision had);
a subtree whose every option has been run to the end is complete. ``Steering`` wraps a strategy's chooser and,
when the strategy's pick leads into a complete subtree, takes the first option that does not, so no schedule is
run twice while any new one is left; when the root is complete the whole space has been run: ``exhausted``.
This is the default for random, pct and pos (``skip_duplicates=True``); it never lowers the chance of reaching a
schedule not yet run, because only picks that lead into subtrees already run to the end are redirected (so PCT's
per-schedule bound still holds). The systematic strategies (dfs, dpor) never repeat themselves and know when they
are done, so they run without it.

``Progress`` is what an exploration tells a ``progress=`` callback after every schedule: the engine reports plain
numbers and the CLI or pytest plugin decides how to show them (the engine knows nothing of rich). ``Coverage`` is
an exploration's account of all this: it counts every finished schedule into the ``Result`` and tells the callback.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from racecheck.errors import user_callback
from racecheck.runtime.access import FAIRNESS_OBJ, READ, WRITE
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.relation import Relation, active
from racecheck.runtime.steps import Access, ObjKind
from racecheck.runtime.trace import TraceEvent
from racecheck.search.dependency import causal_past
from racecheck.search.registry import is_systematic

if TYPE_CHECKING:
    from racecheck.config import Config
    from racecheck.runtime.scheduler import Run
    from racecheck.search.result import Result

__racecheck_engine__ = True


# (thread, switch, access, point, marks) of a trace event: all an interleaving key depends on
_SHAPE = attrgetter("tid", "switch", "access", "at", "marks")
_OBJECT = itemgetter(0)
_COMPLETE = attrgetter("complete")
_TEXT = attrgetter("text")

_DIGESTS: dict[tuple, str] = {}  # a key's structure -> its digest
_RELATION: list[Relation] = [active()]  # the relation the caches were filled under

# A trace's shape -> its key. An exploration meets the same few interleavings again and again (far fewer than
# distinct schedules), and the shape is built and hashed by C-level iteration, so a repeat costs that and a lookup
# instead of a pass over the trace in Python.
_KEYS: dict[tuple, str] = {}
_KEY_LIMIT = 1 << 12
_CACHED_EVENTS = 512  # traces up to this long have their keys remembered


def interleaving_key(events: Sequence[TraceEvent]) -> str:
    """A digest of the per-object access order of a trace (the interleaving's identity).

    Every access of every step becomes (object, thread, the point it was made at), notes counted in the step they
    belong to; a stable sort by object puts each object's accesses together in trace order. A point is the step's
    place among its thread's scheduling points (``TraceEvent.at``, or the thread's step number for a trace that
    does not record it), or for a memory access that joined a running step, its own (``TraceEvent.marks``): so a
    thread's accesses are named alike whether other threads could run between them (separate steps) or not (one
    step). Each object becomes the line "<object>\x02<group>\x00<group>..." where a group is one access
    "<thread>.<point>", or a run of mutually commuting accesses, its distinct threads each with the first point it
    has in the run, sorted and joined by \x01; consecutive single accesses of one thread count once (a step that
    repeats an access it already made records it once). The lines, in object order, joined by \x03, are hashed.
    Separators are control characters that no object name contains. ``tests/engine/test_coverage.py`` compares it
    with a plain implementation of that definition on generated traces, and the dpor model test uses the same
    definition."""
    shape = tuple(map(_SHAPE, events))
    if _RELATION[0] is not active():  # a planted relation (a test's): keys made under another one do not hold
        _KEYS.clear()
        _DIGESTS.clear()
        _RELATION[0] = active()
    key = _KEYS.get(shape)
    if key is None:
        key = _digest(shape)
        if len(shape) <= _CACHED_EVENTS:  # a long trace (memory watched) rarely repeats, and would fill memory
            if len(_KEYS) >= _KEY_LIMIT:
                _KEYS.clear()
            _KEYS[shape] = key
    return key


def _digest(shape: tuple) -> str:
    """``interleaving_key`` of a trace's shape: its structure (per object, its groups of steps) is built in one
    pass, and only a structure not met before is turned into text and hashed."""
    relation = _RELATION[0]
    if _has_wildcard(shape, relation):
        shape = _expanded(shape, relation)
    runs = relation.runs
    counts: dict[int, int] = {}
    running: dict[int, tuple[int, int]] = {}  # thread -> its running step
    history: dict[Any, list] = {}
    order: list[tuple[int, int]] = []  # every step, for the fairness every step reads once a yield wrote it
    yielded: set[tuple[int, int]] = set()
    for tid, switch, access, at, marks in shape:
        if switch == "info":
            if not access:
                continue
            who = (tid, at) if at >= 0 else running.get(tid) or (tid, counts.get(tid, 1) - 1)
        else:
            nth = counts.get(tid, 0)
            counts[tid] = nth + 1
            who = (tid, nth) if at < 0 else (tid, at)
            running[tid] = who
            order.append(who)
            if not access:
                continue
        own = len(access) - len(marks)  # the accesses after these joined the step at points of their own
        for position, one in enumerate(access):
            if position >= own:
                who = (tid, marks[position - own])
            obj = one.obj
            if obj is FAIRNESS_OBJ:
                yielded.add(who)
                continue
            line = history.get(obj)
            together = runs[obj.kind].get(one.kind)
            if line is None:
                history[obj] = [together, {who} if together is not None else who]
            elif together is not None and line[-2] is together:
                line[-1].add(who)
            else:
                line += (together, {who} if together is not None else who)
    if yielded:
        line = history[FAIRNESS_OBJ] = []
        for who in order:
            if who in yielded:
                line += (None, who)
            elif line and line[-2] is not None:
                line[-1].add(who)
            else:
                line += (runs[ObjKind.FAIRNESS][READ], {who})
    structure = tuple((obj, _canonical(history[obj][1::2])) for obj in sorted(history, key=_TEXT))
    key = _DIGESTS.get(structure)
    if key is None:
        lines = [obj.text + "\x02" + "\x00".join(map(_group_text, groups)) for obj, groups in structure]
        text = "\x03".join(lines)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if len(shape) <= _CACHED_EVENTS:
            if len(_DIGESTS) >= _KEY_LIMIT:
                _DIGESTS.clear()
            _DIGESTS[structure] = key
    return key


def _has_wildcard(shape: tuple, relation: Relation) -> bool:
    wildcards = relation.wildcards
    for _tid, _switch, access, _at, _marks in shape:
        for one in access:
            if one.obj.kind in wildcards:
                return True
    return False


def _expanded(shape: tuple, relation: Relation) -> tuple:
    """A shape whose wildcard accesses (``Relation.covers``) are written out as a write of every object they cover
    that the trace touches: a bare point's ``anything`` of every object, unresolved memory of every piece of memory.
    Then the per-object order orders a wildcard against everything it conflicts with."""
    objects = sorted({one.obj for _t, _s, access, _a, _m in shape for one in access if one.obj is not FAIRNESS_OBJ},
                     key=_TEXT)
    wildcards = relation.wildcards
    out = []
    for tid, switch, access, at, marks in shape:
        if any(one.obj.kind in wildcards for one in access):
            # The step's own accesses, then those that joined it at points of their own (``marks``): each keeps its
            # point, so that an access named alike whether it joined a step or made its own stays so expanded.
            own = len(access) - len(marks)
            written = tuple(dict.fromkeys(_written(access[:own], objects, relation)))
            joined: list[Access] = []
            joined_marks: list[int] = []
            for one, mark in zip(access[own:], marks, strict=True):
                for expanded in _written((one,), objects, relation):
                    joined.append(expanded)
                    joined_marks.append(mark)
            access, marks = written + tuple(joined), tuple(joined_marks)
        out.append((tid, switch, access, at, marks))
    return tuple(out)


def _written(access: Sequence[Access], objects: list[Any], relation: Relation) -> list[Access]:
    """``access`` with each wildcard written out as a write of every object it covers (itself included)."""
    out: list[Access] = []
    for one in access:
        wild = one.obj
        if relation.is_wildcard(wild):
            out.extend(Access(obj, WRITE) for obj in objects if obj is wild or relation.covers(wild, obj))
        else:
            out.append(Access(wild, one.kind))
    return out


def run_events(run: Run) -> Sequence[TraceEvent]:
    """The events a run's interleaving is made of: all of them, or for a run stopped by an exception in one thread,
    those that happen before it (``dependency.causal_past``): the other threads stopped wherever they were."""
    failure = run.failure
    if failure is not None and failure.kind == "exception" and failure.tid is not None:
        return causal_past(run.trace, failure.tid)
    return run.trace


def _frozen(group: Any) -> Any:
    return frozenset(group) if type(group) is set else group


def _canonical(groups: list) -> tuple:
    """An object's groups as the key names them: a run of commuting accesses by its threads' first points, and a
    thread's consecutive single accesses once."""
    out: list = []
    for group in groups:
        if type(group) is set:
            first: dict[int, int] = {}
            for tid, point in sorted(group):
                first.setdefault(tid, point)
            out.append(frozenset(first.items()))
        elif not (out and type(out[-1]) is tuple and out[-1][0] == group[0]):
            out.append(group)
    return tuple(out)


def _group_text(group: Any) -> str:
    if type(group) is frozenset:
        return "\x01".join(sorted(f"{tid}.{nth}" for tid, nth in group))
    return f"{group[0]}.{group[1]}"


@dataclass(frozen=True)
class Progress:
    """A snapshot handed to ``Config.progress`` after every schedule of an exploration (never during a run).

    Everything is a function of the seed and the program, never of time: the same exploration calls the callback
    with the same sequence of snapshots in any process."""

    schedules: int  # schedules run so far (failure-database replays included)
    requested: int  # the budget (``Config.schedules``)
    interleavings: int  # distinct interleavings so far
    distinct: int  # distinct schedules (choice sequences) so far
    failures: int  # distinct failures found so far
    exhausted: bool  # every schedule of the space has now been run (the exploration stops)
    index: int  # this schedule's index (-1 for one replayed from the failure database)
    interleaving: str  # this schedule's interleaving key (``interleaving_key``), to merge counts across processes
    schedule: str  # a digest of this schedule's choices (``schedule_digest``): equal digests, the same schedule
    failed: bool  # this schedule failed


def exhausted_note(distinct: int, strategy: str, bound: int | None, interleavings: int = 0) -> str:
    """How reports say that a small space was run to its end (``exhausted: all 12 distinct schedules explored``).
    dfs with a preemption bound finished only the schedules within that bound; dpor explored every class of
    equivalent interleavings (one schedule each), within its bound if it had one."""
    within = (f" with at most {bound} preemption{'s' * (bound != 1)}" if bound is not None and is_systematic(strategy)
              else "")
    if strategy == "dpor":
        plural = "" if interleavings == 1 else "es"
        return f"exhausted: all {interleavings} class{plural} of equivalent interleavings{within} explored"
    plural = "" if distinct == 1 else "s"
    return f"exhausted: all {distinct} distinct schedule{plural}{within} explored"


def schedule_digest(choices: Sequence[int]) -> str:
    """A short digest of a choice sequence: the identity of a schedule (same digest in every process)."""
    return hashlib.sha256(",".join(map(str, choices)).encode("ascii")).hexdigest()[:16]


class _Node:
    """One decision point reached by some run, or the end of a run.

    A path that no other run shares is kept unexpanded as ``tail``: the run's choice and arity arrays plus the
    offset of this node in them (``tail[0][offset]`` is the option taken here). It is expanded into nodes only when
    a later run follows it, so a thousand long random runs that part ways early cost a few compact arrays, not a
    node per decision."""

    __slots__ = ("arity", "children", "complete", "tail")

    def __init__(self) -> None:
        self.arity = 0  # options at this decision; 0 for a node where a run ended (a leaf) or a tail's head
        self.children: dict[int, _Node] = {}
        self.complete = False  # every option below has been run to its end
        self.tail: tuple[Sequence[int], Sequence[int], int] | None = None

    def expand(self) -> None:
        """Turn the head of an unexpanded tail into a real decision with one child (which keeps the rest)."""
        tail = self.tail
        if tail is None:
            return
        choices, arities, offset = tail
        self.tail = None
        if offset >= len(choices):  # the run ended here
            self.complete = True
            return
        self.arity = arities[offset]
        child = _Node()
        child.tail = (choices, arities, offset + 1)
        child.complete = offset + 1 >= len(choices)
        self.children[choices[offset]] = child


def _compact(values: Sequence[int]) -> Sequence[int]:
    """The smallest array that holds ``values`` (choice indices are small): a quarter of a list of ints."""
    try:
        return array("H", values)
    except OverflowError:
        return tuple(values)


class ChoiceTree:
    """Every choice sequence run so far; ``complete`` once every option of every decision has been run.

    ``distinct`` counts the different schedules recorded (a schedule is its whole choice sequence); ``runs`` every
    recorded run, ``duplicates`` the runs that repeated an earlier schedule exactly."""

    def __init__(self) -> None:
        self.root = _Node()
        self.runs = 0
        self.distinct = 0
        self.duplicates = 0

    @property
    def complete(self) -> bool:
        return self.root.complete

    def add(self, choices: Sequence[int], arities: Sequence[int]) -> bool:
        """Record one executed run; False when exactly this schedule had been run before."""
        self.runs += 1
        length = min(len(choices), len(arities))
        node = self.root
        path = [node]
        for depth in range(length):
            if node.tail is not None:
                node.expand()
            if not node.children and node.complete:
                node.complete = False  # a schedule seen ending here now goes on (the program is not deterministic)
            node.arity = arities[depth]
            child = node.children.get(choices[depth])
            if child is None:  # a new path from here on: keep the rest as one compact tail
                child = node.children[choices[depth]] = _Node()
                child.tail = (_compact(choices[depth + 1:length]), _compact(arities[depth + 1:length]), 0)
                child.complete = depth + 1 >= length
                path.append(child)
                self.distinct += 1
                self._settle(path)
                return True
            node = child
            path.append(node)
        if node.tail is not None and node.tail[2] < len(node.tail[0]):
            node.expand()  # this run ends where an earlier one went on: it is new (and the tree is odd)
        new = not node.complete
        if new:
            self.distinct += 1
        else:
            self.duplicates += 1
        node.complete = not node.children or node.complete
        self._settle(path)
        return new

    @staticmethod
    def _settle(path: list[_Node]) -> None:
        """Mark complete every node on ``path`` (deepest first) whose options have all been run to the end."""
        for parent in reversed(path[:-1]):
            if parent.complete:
                break
            if len(parent.children) < parent.arity or not all(map(_COMPLETE, parent.children.values())):
                break
            parent.complete = True


class Steering(Chooser):
    """Wraps a strategy's chooser: a pick that leads into a completely explored subtree becomes the first option
    that does not (the strategy's own order is kept everywhere else)."""

    def __init__(self, inner: Chooser, tree: ChoiceTree) -> None:
        self.inner = inner
        self.node: _Node | None = tree.root

    def _steer(self, n: int, pick: int) -> int:
        node = self.node
        if node is None:
            return pick
        if node.tail is not None:
            node.expand()
        child = node.children.get(pick)
        if child is not None and child.complete:
            for option in range(n):
                other = node.children.get(option)
                if other is None or not other.complete:
                    pick = option
                    break
        self.node = node.children.get(pick)
        return pick

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        pick = self.inner.pick_thread(enabled, current_enabled, yielding, current)
        node = self.node  # ``_steer``, inlined for the common cases (this runs at every decision)
        if node is None:
            return pick
        if node.tail is None:
            child = node.children.get(pick)
            if child is None or not child.complete:
                self.node = child
                return pick
        return self._steer(len(enabled), pick)

    def pick_value(self, n, label):
        return self._steer(n, self.inner.pick_value(n, label))


class Coverage:
    """What an exploration has covered so far: distinct schedules (a ``ChoiceTree``), distinct interleavings,
    and the ``progress`` callback that is told after every schedule."""

    # Traces whose interleaving keys are not computed yet, at most this many (or this many events) at a time.
    _PENDING_RUNS = 64
    _PENDING_EVENTS = 1 << 14

    def __init__(self, config: Config) -> None:
        self.config = config
        # dfs and dpor never repeat themselves and know when they are done; the sampling strategies learn it from
        # the tree
        self.tree = ChoiceTree() if not is_systematic(config.strategy) else None
        self.steering = self.tree is not None and config.skip_duplicates
        self.keys: set[str] = set()
        # Sampled runs (``racecheck.control.memory_sampling``) have fewer decisions than runs watched whole, and
        # traces without the accesses they left unwatched: their own tree and keys, which never make the space
        # exhausted (their tree's end only ends the sampling) and count as interleavings only where they see more.
        self.sampled_tree = ChoiceTree() if self.tree is not None else None
        self.sampled_keys: set[str] = set()
        self._pending: list[tuple[list, bool]] = []  # (trace, sampled) of counted schedules ``settle`` has yet to key
        self._pending_events = 0

    def chooser(self, inner: Chooser, sampled: bool = False) -> Chooser:
        tree = self.sampled_tree if sampled else self.tree
        return Steering(inner, tree) if self.steering and tree is not None else inner

    @property
    def sampled_complete(self) -> bool:
        """Every sampled schedule has run."""
        return self.steering and self.sampled_tree is not None and self.sampled_tree.complete

    @property
    def exhausted(self) -> bool:
        """Every schedule of the space has run (only claimed when duplicates are skipped: with independent
        samples the budget is spent as asked)."""
        return self.steering and self.tree is not None and self.tree.complete

    def count(self, run: Run, index: int, result: Result, done: bool = False) -> None:
        """Account for one finished schedule in ``result`` and tell the progress callback (``done``: the strategy
        itself knows the space is finished, as dfs does).

        Without a progress callback, nothing reads the interleaving count before the exploration ends, so keys are
        computed in batches (``settle``): run between schedules, the key's code and data are evicted by the
        workload each time, and computing one took much longer than in a loop over many traces."""
        trace = run_events(run)
        sampled = run.sampled
        if self.config.progress is not None:
            key = interleaving_key(trace)
            (self.sampled_keys if sampled else self.keys).add(key)
            result.interleavings = max(len(self.keys), len(self.sampled_keys))
        else:
            self._pending.append((trace, sampled))
            self._pending_events += len(trace)
            if len(self._pending) >= self._PENDING_RUNS or self._pending_events >= self._PENDING_EVENTS:
                self.settle(result)
        if self.tree is not None and self.sampled_tree is not None:
            (self.sampled_tree if sampled else self.tree).add(run.choices, run.arities)
            whole = self.tree.distinct  # an exhausted space: its schedules, all watched whole
            result.distinct = whole if self.tree.complete else whole + self.sampled_tree.distinct
        else:
            result.distinct += 1
        result.sampled += sampled
        result.schedules += 1
        result.max_steps_seen = max(result.max_steps_seen, run.steps)
        result.crashes += int(run.crashed)
        if self.config.progress is not None:
            user_callback(self.config.progress, Progress(
                schedules=result.schedules, requested=self.config.schedules, interleavings=result.interleavings,
                distinct=result.distinct, failures=len(result.failures), exhausted=done or self.exhausted, index=index,
                interleaving=key, schedule=schedule_digest(run.choices), failed=run.failure is not None,
            ))

    def settle(self, result: Result) -> None:
        """Add the keys of the schedules counted since the last call: ``result.interleavings`` is exact after it."""
        pending, self._pending, self._pending_events = self._pending, [], 0
        keys, sampled_keys = self.keys, self.sampled_keys
        for trace, sampled in pending:
            (sampled_keys if sampled else keys).add(interleaving_key(trace))
        result.interleavings = max(len(keys), len(sampled_keys))
