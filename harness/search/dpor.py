"""Dynamic partial-order reduction (``strategy="dpor"``): every class of equivalent interleavings, with no bound.

Two schedules that differ only in the order of steps that commute (``racecheck.search.dependency``) run the same
way; exhaustive search (dfs) runs both, this runs one of them and proves the others by the reduction. The algorithm
is source-set DPOR with sleep sets (Abdulla, Aronis, Jonsson and Sagonas, POPL 2014; Flanagan and Godefroid,
POPL 2005; Godefroid 1996), in its stateless form:

* An execution runs to its end, taking option 0 (keep running the current thread) wherever the search has no
  other plan, and records at every decision the candidate threads and which one ran.
* Afterwards every *race* is found: a step ``i`` and a later step ``j`` of another thread that conflict and are
  not already ordered through other steps (happens-before by program order and conflicts). Its order could be
  reversed, so at the decision before ``i`` the search makes sure that one thread able to start the reversal is
  among the options still to try (the *backtrack set*): the *initials* of the steps after ``i`` that do not
  depend on it, followed by ``j`` (source sets, Abdulla et al., "Optimal dynamic partial order reduction", POPL
  2014). The thread of ``j`` alone, as in Flanagan and Godefroid's first algorithm, is not enough once sleep sets
  prune: tests/search/test_dpor_model.py has the program that shows it. When none of the initials could run
  there (blocked, not yet started), every candidate there is added, which keeps the search sound for threads
  that block, wait on time or are started later.
* Threads still waiting when the run ended (a deadlock, a blocked background thread) take part with the operation
  they were waiting in, so orders that would have let them run are tried too.
* Blocking hides races: a step that waited (a get on a queue another thread emptied and refilled, an acquire of a
  lock held across several steps) is ordered after the other thread's steps through the one that let it go, so no
  race names the earlier step it could have preceded. Two rules from Flanagan and Godefroid's treatment of
  disabled transitions add those: while a thread waited at its step, every conflicting step of another thread, and
  the last conflicting one before the wait (``waiting_races``), gets the waiting thread tried before it; and a race
  with a step made while a lock was held is also reversed before that lock's acquire (``blocked_since``).
* Sleep sets: once an option has been explored at a decision, later siblings carry it "asleep" until a step that
  conflicts with its step runs; an asleep thread is not chosen, since every schedule that starts with it was
  covered by the earlier sibling. A run in which every candidate is asleep is finished anyway (it is a real
  schedule, and its failures are real) but it adds no new class.
* Value choices of extensions (faults, crashes) branch on every value, like dfs.

The next execution replays the path to the deepest decision with an option left (a prefix of choices, checked
against the recorded candidates: a program that does not follow its own prefix raises ``ReplayDivergence``) and
takes that option. The search is a subset of dfs's tree, so it never runs more schedules than unbounded dfs, and
``exhausted`` (no option left anywhere) means every class of equivalent interleavings was explored. With
``preemption_bound`` set, options that would exceed it are not tried (as dfs does), and the claim is for schedules
within the bound.

What the reduction assumes (docs/dependency.md): code between two scheduling points touches only objects its
step's accesses name, or plain memory no other thread touches between points (a program that shares plain memory
without a lock marks the place with ``racecheck.point()``, which conflicts with every other such point); and a
thread's next operation from a state does not depend on the order of steps that commute.
"""

from __future__ import annotations

from typing import Any

from racecheck import runtime
from racecheck.errors import ReplayDivergence
from racecheck.runtime.access import ACQUIRE, Access
from racecheck.runtime.chooser import Chooser
from racecheck.search.analysis import Analysis, Step, at_the_block, blocked_since, initials, lock_holds, steps_of
from racecheck.search.dependency import dependent
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True

Accesses = tuple[Access, ...]

THREAD, VALUE = "thread", "value"
_AWAKE: dict[int, Accesses] = {}  # the sleep set of a node where nobody sleeps: shared, never changed


class Node:
    """One decision on the current path of the search: its options, what was explored from it and what is left."""

    __slots__ = ("kind", "step", "options", "chosen", "backtrack", "done", "sleep", "explored", "costly", "used")

    def __init__(self, kind: str, step: int, options: tuple[int, ...], chosen: int, sleep: dict[int, Accesses],
                 costly: bool, used: int) -> None:
        self.kind = kind
        self.step = step  # the trace step the decision chose (for a value: the step that made the choice)
        self.options = options  # candidate thread ids in the scheduler's order, or range(arity) for a value
        self.chosen = chosen  # index into options
        self.backtrack = {chosen}  # indices to explore from here
        self.done = {chosen}  # indices explored (or being explored) from here
        self.sleep = sleep  # asleep on arrival: thread id -> the accesses of its step
        self.explored: dict[int, Accesses] = {}  # thread id -> the accesses of its step when it ran from here
        self.costly = costly  # leaving option 0 here is a preemption
        self.used = used  # preemptions spent before this decision

    def pending(self, bound: int | None) -> list[int]:
        """Indices still to explore, in option order: in the backtrack set, not done, not asleep, within bound."""
        left = []
        for index in sorted(self.backtrack - self.done):
            if self.kind == THREAD and self.options[index] in self.sleep:
                continue
            if bound is not None and self.costly and index and self.used + 1 > bound:
                continue
            left.append(index)
        return left


class DPORChooser(Chooser):
    """One execution of the search: replays ``prefix`` (shared nodes of the path, the last one with its new
    choice), then takes the first option not asleep at every later decision, recording each as a new node."""

    def __init__(self, prefix: list[Node]) -> None:
        self.prefix = prefix
        self.nodes: list[Node] = []
        self.run: Any = None
        self.sleep: dict[int, Accesses] = {}
        self.seen = 0  # trace events already taken into account (every one of them part of a finished step)
        # The step at which the run ran into a sleeping thread (it ran alone, or every candidate was asleep): from
        # there on it repeats a class an earlier sibling covered, so it is not analysed past that step.
        self.blocked: int | None = None
        self.preemptions = 0

    @property
    def redundant(self) -> bool:
        """The schedule adds no new class (it ran into a sleeping thread)."""
        return self.blocked is not None

    # -- what the run did since the last decision ----------------------------------------------------------------
    def _absorb(self, complete: bool) -> None:
        """Wake the threads that the steps finished since the last decision conflict with (and those that ran).

        Incremental: only the trace events after ``seen`` are read. At a thread decision every step in the trace
        has finished (the current thread is at its next point); at a value decision the running step has not,
        so it is left for the next time (its notes are still to come)."""
        run = self.run
        if run is None:
            self.run = run = runtime.current_run()
            if run is None:
                return
        trace = run.trace
        end = len(trace)
        if not complete:
            end -= 1
            while end > self.seen and trace[end].switch == "info":
                end -= 1
        if end <= self.seen:
            return
        if self.sleep:
            for step in steps_of(trace[self.seen:end]):
                if step.tid in self.sleep and self.blocked is None:
                    self.blocked = step.number
                self.sleep = {tid: acc for tid, acc in self.sleep.items()
                              if tid != step.tid and not dependent(acc, step.accesses)}
                if not self.sleep:
                    break
        self.seen = end

    def _arrive(self, kind: str, options: tuple[int, ...], costly: bool) -> int:
        position = len(self.nodes)
        step = self.run.steps if self.run is not None else 0
        if position < len(self.prefix):
            node = self.prefix[position]
            if node.kind != kind or node.options != options:
                raise ReplayDivergence(
                    "partial-order search diverged: the code under test offered other options on a replayed prefix"
                )
            node.step = step
            if position == len(self.prefix) - 1:
                # The branch: asleep are those asleep on arrival, plus the siblings explored before this option.
                self.sleep = dict(node.sleep)
                if kind == THREAD:
                    for index in node.done:
                        tid = node.options[index]
                        if index != node.chosen and tid in node.explored:
                            self.sleep[tid] = node.explored[tid]
            else:
                self.sleep = {}
        else:
            chosen = 0
            if kind == THREAD:
                awake = [i for i, tid in enumerate(options) if tid not in self.sleep]
                if awake:
                    chosen = awake[0]
                elif self.blocked is None:
                    self.blocked = step
            asleep = dict(self.sleep) if self.sleep else _AWAKE
            node = Node(kind, step, options, chosen, asleep, costly, self.preemptions)
            if kind == VALUE:
                node.backtrack = set(range(len(options)))
        if node.costly and node.chosen:
            self.preemptions += 1
        self.nodes.append(node)
        return node.chosen

    def pick_thread(self, enabled, current_enabled, yielding, current=None):
        self._absorb(True)
        return self._arrive(THREAD, tuple(enabled), current_enabled and not yielding)

    def pick_value(self, n, label):
        self._absorb(False)
        return self._arrive(VALUE, tuple(range(n)), False)

    def finish(self) -> list[Step]:
        """The execution's steps once it has ended, with the waiting threads' operations as pseudo-steps."""
        if self.run is None:
            return []
        steps = steps_of(self.run.trace, True)
        for rec in getattr(self.run, "threads", ()):
            # Unwound at the end (a deadlock, a failure elsewhere, a parked background thread): its record keeps
            # the operation it waited in; a thread that ended says "exit".
            if getattr(rec, "launched", False) and getattr(rec, "op", "exit") != "exit" and getattr(rec, "access", ()):
                steps.append(Step(rec.tid, -1, tuple(rec.access)))
        return steps


class DPOR(Strategy):
    """The search over decisions; see the module docstring."""

    name = "dpor"

    def __init__(self, seed: int = 0, preemption_bound: int | None = None) -> None:
        super().__init__(seed)
        self.bound = preemption_bound
        self.next_prefix: list[Node] | None = []
        self.redundant = 0  # schedules that added no new class (every candidate asleep somewhere)
        self.analysis = Analysis()  # the last execution's, rewound to the prefix the next one shares

    def new_execution(self, index: int) -> Chooser | None:
        if self.next_prefix is None:
            self.exhausted = True
            return None
        return DPORChooser(self.next_prefix)

    def end_execution(self, chooser: Chooser, steps: int) -> None:
        assert isinstance(chooser, DPORChooser)
        path = chooser.nodes
        if chooser.redundant:
            self.redundant += 1
        done_steps = chooser.finish()
        at_step = {node.step: node for node in path if node.kind == THREAD}
        for step in done_steps:
            node = at_step.get(step.number)
            if node is not None:
                node.explored.setdefault(node.options[node.chosen], step.accesses)
        if chooser.blocked is not None:
            done_steps = at_the_block(done_steps, chooser.blocked)
        # Races whose later step was already in the replayed prefix were found when that prefix first ran.
        fresh = 0
        if chooser.prefix:
            branch = chooser.prefix[-1].step
            fresh = next((k for k, step in enumerate(done_steps) if step.number >= branch or step.number < 0),
                         len(done_steps))
        analysis = self.analysis
        shared = analysis.shared(done_steps, fresh)
        analysis.rewind(shared)
        found = []
        for index in range(shared, len(done_steps)):
            found += analysis.add(done_steps[index], index >= fresh)
        before = analysis.before
        holds = None  # who held which lock when: read only for a race whose later step takes a lock
        for i, j in found:
            if holds is None and any(access.kind == ACQUIRE for access in done_steps[j].accesses):
                holds = lock_holds(done_steps)
            for at in (i, *(blocked_since(done_steps, holds, i, j) if holds else ())):
                node = at_step.get(done_steps[at].number)
                if node is not None:  # else the step ran alone: there was no other option at that point
                    self._reverse(node, initials(done_steps, before, at, j))
        thread_nodes = [node for node in path if node.kind == THREAD]
        for i, j in analysis.waiting_races(fresh):
            tid = done_steps[j].tid
            # The waiting thread goes first at the last decision up to i where it could run at all: where it
            # could not, trying everyone (Flanagan and Godefroid's fallback) only repeats classes, since what lets
            # it run there is another race, reversed on its own.
            number = done_steps[i].number
            for node in reversed(thread_nodes):
                if node.step <= number and tid in node.options:
                    self._reverse(node, [tid])
                    break
        self._advance(path)

    @staticmethod
    def _reverse(node: Node, starters: list[int]) -> None:
        """Make sure a thread that can start the reversal of a race is among the options to try at ``node``."""
        wanted = [index for index, tid in enumerate(node.options) if tid in starters]
        if not wanted:
            node.backtrack.update(range(len(node.options)))  # none of them could run there: try everyone
        elif not node.backtrack.intersection(wanted):
            awake = [index for index in wanted if node.options[index] not in node.sleep]
            if awake:
                node.backtrack.add(awake[0])

    def _advance(self, path: list[Node]) -> None:
        """The next execution: the deepest decision of ``path`` with an option left takes it; none: done."""
        for depth in range(len(path) - 1, -1, -1):
            node = path[depth]
            left = node.pending(self.bound)
            if left:
                node.chosen = left[0]
                node.done.add(left[0])
                self.next_prefix = path[: depth + 1]
                return
        self.next_prefix = None
        self.exhausted = True
