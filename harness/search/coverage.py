"""Coverage of an exploration: distinct interleavings, duplicate schedules, and a small space seen to its end.

Two schedules that differ only in the order of steps that commute are the same interleaving
(``racecheck.search.interleavings`` computes its identity); ``result.interleavings`` counts the distinct ones, for
every strategy; dpor explores one schedule per interleaving.

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
from operator import attrgetter
from typing import TYPE_CHECKING

from racecheck.control.processes.link import processes_in
from racecheck.errors import user_callback
from racecheck.runtime.chooser import Chooser
from racecheck.search.interleaving_sink import interleaving_of
from racecheck.search.interleavings import interleaving_key
from racecheck.search.registry import is_systematic, reduces

if TYPE_CHECKING:
    from racecheck.runtime.scheduler import Run
    from racecheck.search.options import SearchOptions
    from racecheck.search.result import Result

__racecheck_engine__ = True

__all__ = ["ChoiceTree", "Coverage", "Progress", "Steering", "exhausted_note", "interleaving_key", "interleaving_of",
           "schedule_digest"]


_COMPLETE = attrgetter("complete")


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
    if reduces(strategy):
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

    def begin(self, view):
        self.inner.begin(view)

    def end(self, run_end):
        self.inner.end(run_end)

    def pick_thread(self, decision):
        pick = self.inner.pick_thread(decision)
        node = self.node  # ``_steer``, inlined for the common cases (this runs at every decision)
        if node is None:
            return pick
        if node.tail is None:
            child = node.children.get(pick)
            if child is None or not child.complete:
                self.node = child
                return pick
        return self._steer(len(decision.enabled), pick)

    def pick_value(self, n, label):
        return self._steer(n, self.inner.pick_value(n, label))


class Coverage:
    """What an exploration has covered so far: distinct schedules (a ``ChoiceTree``), distinct interleavings,
    and the ``progress`` callback that is told after every schedule."""

    # Traces whose interleaving keys are not computed yet, at most this many (or this many events) at a time.
    _PENDING_RUNS = 64
    _PENDING_EVENTS = 1 << 14

    def __init__(self, config: SearchOptions) -> None:
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
        workload each time, and computing one took much longer than in a loop over many traces. What a key is
        computed from is what the run's ``InterleavingSink`` was told at its end (``interleaving_of``)."""
        trace = interleaving_of(run)
        sampled = run.memory_steps.sampled
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
        result.processes = max(result.processes, processes_in(run))
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
