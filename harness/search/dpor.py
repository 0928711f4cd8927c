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
  they were waiting in, so orders that would have let them run are tried too. A thread that a failure elsewhere
  stopped takes part with an unknown rest (``analysis.REST``), which conflicts with every step.
* Blocking hides races: a step that waited (a get on a queue another thread emptied and refilled, an acquire of a
  lock held across several steps) is ordered after the other thread's steps through the one that let it go, so no
  race names the earlier step it could have preceded. Two rules from Flanagan and Godefroid's treatment of
  disabled transitions add those: while a thread waited at its step, every conflicting step of another thread, and
  the last conflicting one before the wait (``Analysis._hidden``), gets the waiting thread tried before it; and a race
  with a step made while a lock was held is also reversed before that lock's acquire (``blocked_since``). Where the
  later step is a blocking acquire of a lock (``access.ExclusiveObj``) that the earlier step's own thread held
  across it, taken by a blocking acquire too, it is reversed *only* there: before the earlier step the later one
  could not run (it would block, and trying it there repeats the class the run just had). A third thread's hold,
  a hold a try-acquire took, a try-acquire, a timeout or a semaphore keep the reversal at the earlier step too. A
  thread that was among the candidates at every step since its previous one never waited: the first rule skips it.
* Sleep sets: once an option has been explored at a decision, later siblings carry it "asleep" until a step that
  conflicts with its step runs; an asleep thread is not chosen, since every schedule that starts with it was
  covered by the earlier sibling. A run in which every candidate is asleep is finished anyway (it is a real
  schedule, and its failures are real) but it adds no new class.
* Value choices of extensions (faults, crashes) branch on every value, like dfs.

The next execution replays the path to the deepest decision with an option left (a prefix of choices, checked
against the recorded candidates: a program that does not follow its own prefix raises ``ReplayDivergence``) and
takes that option. A replay runs the steps it ran before (the same choices make the same run, as dfs and every
token assume), so the analysis of the shared prefix is kept and only the steps after the new choice are analysed
(``racecheck.search.analysis``: the search pays it for every schedule, on top of the run). The search is a subset
of dfs's tree, so it never runs more schedules than unbounded dfs, and ``exhausted`` (no option left anywhere)
means every class of equivalent interleavings was explored. With
``preemption_bound`` set, options that would exceed it are not tried (as dfs does), and the claim is for schedules
within the bound.

What the reduction assumes (docs/dependency.md): code between two scheduling points touches only objects its
step's accesses name, or plain memory no other thread touches between points (a program that shares plain memory
without a lock marks the place with ``racecheck.point()``, which conflicts with every other such point); and a
thread's next operation from a state does not depend on the order of steps that commute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.errors import ReplayDivergence
from racecheck.runtime.access import ACQUIRE, FAIRNESS_READ, Access
from racecheck.runtime.chooser import Chooser, Decision, RunView
from racecheck.runtime.steps import Outcome, RunEnd, Step
from racecheck.search.analysis import REST, Analysis, StepRow, at_the_block, bits_of, row_of, rows_of
from racecheck.search.dependency import dependent
from racecheck.search.lock_aware import LockAware, held_on_the_way
from racecheck.search.strategy import Strategy

__racecheck_engine__ = True

Accesses = tuple[Access, ...]

THREAD, VALUE = "thread", "value"
_AWAKE: dict[int, Accesses] = {}  # the sleep set of a node where nobody sleeps: shared, never changed
# Lock-aware reduction of the program's own locks where memory is watched (``racecheck.search.lock_aware``); a test
# turns it off for its reference
LOCK_AWARE = True


class Node:
    """One decision on the current path of the search: its options, what was explored from it and what is left.
    ``backtrack`` and ``done`` are sets of option indices as bits (a node is made at every decision)."""

    __slots__ = ("kind", "step", "options", "chosen", "backtrack", "done", "sleep", "explored", "costly", "used")

    def __init__(self, kind: str, step: int, options: Sequence[int], chosen: int, sleep: dict[int, Accesses],
                 costly: bool, used: int) -> None:
        self.kind = kind
        self.step = step  # the trace step the decision chose (for a value: the step that made the choice)
        self.options = options  # candidate thread ids in the scheduler's order, or range(arity) for a value
        self.chosen = chosen  # index into options
        self.backtrack = 1 << chosen  # indices to explore from here
        self.done = 1 << chosen  # indices explored (or being explored) from here
        self.sleep = sleep  # asleep on arrival: thread id -> the accesses of its step
        self.explored: dict[int, Accesses] = _NONE_EXPLORED  # thread id -> the accesses of its step from here
        self.costly = costly  # leaving option 0 here is a preemption
        self.used = used  # preemptions spent before this decision

    def explore(self, tid: int, accesses: Accesses) -> None:
        """Thread ``tid``'s step from here touched ``accesses`` (the first time it ran from here counts)."""
        if self.explored is _NONE_EXPLORED:
            self.explored = {tid: accesses}
        elif tid not in self.explored:
            self.explored[tid] = accesses

    def pending(self, bound: int | None) -> tuple[list[int], int]:
        """Indices still to explore, in option order: in the backtrack set, not done, not asleep, within bound; and
        how many the bound left out."""
        left = []
        cut = 0
        for index in bits_of(self.backtrack & ~self.done):
            if self.kind == THREAD and self.options[index] in self.sleep:
                continue
            if bound is not None and self.costly and index and self.used + 1 > bound:
                cut += 1
                continue
            left.append(index)
        return left, cut


_NONE_EXPLORED: dict[int, Accesses] = {}  # nothing explored from a node yet: shared, never changed


class DPORChooser(Chooser):
    """One execution of the search: replays ``prefix`` (shared nodes of the path, the last one with its new
    choice), then takes the first option not asleep at every later decision, recording each as a new node.

    Replaying the prefix is the common case (most of an execution's decisions): it only checks that the program
    offers the options it offered before and answers the choice recorded."""

    def __init__(self, prefix: list[Node]) -> None:
        self.prefix = prefix
        self.branch = len(prefix) - 1  # the position of the prefix's last decision, where this execution turns
        self.position = 0  # decisions made so far
        self.nodes: list[Node] = []  # the decisions after the prefix
        self.view: RunView | None = None  # the run, as ``begin`` hands it
        self.run_end: RunEnd | None = None  # how it ended, as ``end`` tells it
        self.sleep: dict[int, Accesses] = {}
        # The step at which the run ran into a sleeping thread (it ran alone, or every candidate was asleep): from
        # there on it repeats a class an earlier sibling covered, so it is not analysed past that step.
        self.blocked: int | None = None
        self.preemptions = 0
        # Where the trace stood at the branch (the last decision of the prefix, when it chose a thread): every
        # event before it belongs to a step that the last execution ran too.
        self.branch_at: int | None = None
        self.watched = False  # the run watches plain memory (lock-aware reduction needs it)

    @property
    def redundant(self) -> bool:
        """The schedule adds no new class (it ran into a sleeping thread)."""
        return self.blocked is not None

    @property
    def path(self) -> list[Node]:
        """Every decision of the execution so far."""
        if self.position < len(self.prefix):  # ended before its branch (a program that stops earlier on replay)
            return self.prefix[: self.position]
        return self.prefix + self.nodes

    # -- what the run did since the last decision ----------------------------------------------------------------
    def _absorb(self, finished: list[Step]) -> None:
        """Wake the threads that the steps finished since the last decision conflict with (and those that ran).

        The run hands those steps at each decision (``Decision.steps_finished``, ``RunView.steps_finished`` at a
        value decision), so every step is read once. Nobody sleeps before the branch, and who sleeps then is only
        ever woken, so they are read only while someone sleeps."""
        for tid, number, accesses in rows_of(finished):
            if tid in self.sleep and self.blocked is None:
                self.blocked = number
            accesses = (*accesses, FAIRNESS_READ)
            self.sleep = {asleep: acc for asleep, acc in self.sleep.items()
                          if asleep != tid and not dependent(acc, accesses)}
            if not self.sleep:
                break

    @staticmethod
    def _diverged() -> None:
        raise ReplayDivergence(
            "partial-order search diverged: the code under test offered other options on a replayed prefix"
        )

    def _replayed(self, kind: str, options: Any) -> Node:
        node = self.prefix[self.position]
        if node.kind != kind or node.options != options:
            self._diverged()
        self.position += 1
        return node

    def _turn(self, node: Node) -> int:
        """The branch: asleep are those asleep on arrival, plus the siblings explored before this option."""
        view = self.view
        self.preemptions = node.used + (1 if node.costly and node.chosen else 0)
        self.sleep = dict(node.sleep)
        if view is not None:
            if node.kind == THREAD:
                self.branch_at = len(view.trace)
                for index in bits_of(node.done & ~(1 << node.chosen)):
                    tid = node.options[index]
                    if tid in node.explored:
                        self.sleep[tid] = node.explored[tid]
        return node.chosen

    def _new(self, kind: str, options: Any, costly: bool) -> int:
        """A decision past the prefix: the first option not asleep, recorded as a new node."""
        self.position += 1
        view = self.view
        step = view.steps if view is not None else 0
        chosen = 0
        sleep = self.sleep
        if sleep:
            if kind == THREAD:
                awake = [i for i, tid in enumerate(options) if tid not in sleep]
                if awake:
                    chosen = awake[0]
                elif self.blocked is None:
                    self.blocked = step
            sleep = dict(sleep)
        else:
            sleep = _AWAKE
        node = Node(kind, step, options, chosen, sleep, costly, self.preemptions)
        if kind == VALUE:
            node.backtrack = (1 << len(options)) - 1
        elif costly and chosen:
            self.preemptions += 1
        self.nodes.append(node)
        return chosen

    def begin(self, view: RunView) -> None:
        self.view = view

    def end(self, run_end: RunEnd) -> None:
        self.run_end = run_end

    def pick_thread(self, decision: Decision):
        # ``enabled`` is a list the scheduler makes for this call and never changes: a node keeps it as it is.
        enabled = decision.enabled
        position = self.position
        if not position and self.view is not None:  # the run's memory watch is set up once it has begun
            self.watched = getattr(self.view, "watched", False)  # a view of a model (tests) watches nothing
        if position < self.branch:  # replaying the prefix: the options it offered before, the choice it made
            node = self.prefix[position]
            if node.options != enabled or node.kind != THREAD:
                self._diverged()
            self.position = position + 1
            return node.chosen
        if position == self.branch:
            return self._turn(self._replayed(THREAD, enabled))
        if self.sleep:
            self._absorb(decision.steps_finished())
        return self._new(THREAD, enabled, decision.current_enabled and not decision.yielding)

    def pick_value(self, n, label):
        if self.position < self.branch:
            return self._replayed(VALUE, range(n)).chosen
        if self.position == self.branch:
            return self._turn(self._replayed(VALUE, range(n)))
        if self.sleep and self.view is not None:
            self._absorb(self.view.steps_finished())
        return self._new(VALUE, range(n), False)

    def finish(self, analysis: Analysis) -> tuple[int, list[StepRow]]:
        """The execution's steps once it has ended, as ``(base, steps)``: the first ``base`` are the steps
        ``analysis`` holds already (the replayed prefix; a replay runs the same steps, so they are not taken in
        again), ``steps`` the rest, with the waiting threads' operations as pseudo-steps at the end. The steps are
        the runtime's (``RunEnd.taken``), from the last one before the branch on (``StepLog.since``: the replayed
        prefix's are not built for this)."""
        run_end = self.run_end
        if run_end is None:
            return 0, []
        taken = run_end.taken
        base, steps = 0, None
        if self.branch_at is not None:
            trace = run_end.trace
            last = self.branch_at - 1
            while last >= 0 and trace[last].switch == "info":
                last -= 1
            if last >= 0:  # the last step before the branch: it and every step before it the last execution ran
                base = analysis.covering(trace[last].step)
                if base > 0:
                    tail = taken.since(last)  # that step, then the new ones: the prefix's steps are not built
                    if (analysis.tids[base - 1], analysis.numbers[base - 1], analysis.accesses[base - 1]) == \
                            row_of(tail[0]):
                        steps = rows_of(tail[1:])
                    else:  # the replay's last step before the branch is not the one analysed: read it all again
                        base = 0
                base = max(base, 0)
        if steps is None:
            steps = rows_of(taken)
        # A failure other than a deadlock stops the run wherever the other threads were: what they would still have
        # done is unknown (``REST``), where a deadlocked or parked thread's next operation is all there is.
        cut = run_end.outcome not in (Outcome.PASSED, Outcome.CRASHED, Outcome.DEADLOCK)
        for waiting in run_end.waiting:
            # Unwound at the end (a deadlock, a failure elsewhere, a parked background thread): the operation it
            # waited in.
            if cut:
                steps.append((waiting.tid, -1, (*waiting.access, REST)))
            elif waiting.access:
                steps.append((waiting.tid, -1, tuple(waiting.access)))
        return base, steps


class DPOR(Strategy):
    """The search over decisions; see the module docstring."""

    name = "dpor"

    def __init__(self, seed: int = 0, preemption_bound: int | None = None) -> None:
        super().__init__(seed)
        self.bound = preemption_bound
        self.next_prefix: list[Node] | None = []
        # Reversals the preemption bound left untried. Partial-order reduction and a preemption bound do not compose:
        # a reversal dropped at one decision is not tried at an earlier one where it would be free, so a search
        # that dropped any has not seen every class within the bound either, and claims nothing (``exhausted``
        # stays False; the strategy is ``finished``).
        self.cut = 0
        self.redundant = 0  # schedules that added no new class (every candidate asleep somewhere)
        self.analysis = Analysis()  # the last execution's, rewound to the prefix the next one shares
        self.path: list[Node] = []  # the last execution's decisions
        self.at_step: dict[int, Node] = {}  # its thread decisions by the step each chose

    def _follow(self, path: list[Node], kept: int) -> None:
        """``at_step`` for ``path``, which shares its first ``kept`` decisions with the last execution's."""
        at_step = self.at_step
        for node in self.path[kept:]:
            if at_step.get(node.step) is node:
                del at_step[node.step]
        for node in path[kept:]:
            if node.kind == THREAD:
                at_step[node.step] = node
        self.path = path

    @property
    def finished(self) -> bool:
        return self.next_prefix is None

    @property
    def no_proof(self) -> str:
        if self.next_prefix is not None or not self.cut:
            return ""
        return (f"not exhausted: the preemption bound left {self.cut} reversal{'s' if self.cut != 1 else ''} "
                "untried, and partial-order reduction does not compose with a bound (dfs proves a bound)")

    def new_execution(self, index: int, sampled: bool = False) -> Chooser | None:
        if self.next_prefix is None:
            return None
        return DPORChooser(self.next_prefix)

    def end_execution(self, chooser: Chooser, steps: int) -> None:
        assert isinstance(chooser, DPORChooser)
        path = chooser.path
        if chooser.redundant:
            self.redundant += 1
        self._follow(path, min(len(chooser.prefix), len(path)))
        if not chooser.prefix and LOCK_AWARE and chooser.watched:  # the first execution: before any analysis
            self.analysis.lax = LockAware()
        found, waiting = self._analyse(chooser)
        self._plan(found, waiting, path)
        self._advance(path)

    def _analyse(self, chooser: DPORChooser) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Take the execution's new steps into the analysis: the races of the steps after the replayed prefix, and
        the races their waits hid (races whose later step was in the prefix were found when it first ran)."""
        analysis, at_step = self.analysis, self.at_step
        base, done_steps = chooser.finish(analysis)
        for _tid, number, accesses in done_steps:
            node = at_step.get(number)
            if node is not None:
                node.explore(node.options[node.chosen], (*accesses, FAIRNESS_READ))
        if chooser.blocked is not None:
            done_steps = at_the_block(done_steps, chooser.blocked)
        if base:  # the analysis holds the prefix already: every step here is new
            fresh = shared = base
        else:
            fresh = 0
            if chooser.prefix:
                branch = chooser.prefix[-1].step
                fresh = next((k for k, (_, number, _) in enumerate(done_steps) if number >= branch or number < 0),
                             len(done_steps))
            shared = analysis.shared(done_steps, fresh)
        analysis.rewind(shared)

        def could_run(tid: int, first: int, last: int) -> bool:
            """Whether thread ``tid`` was among the candidates at every step numbered ``first`` to ``last``."""
            for number in range(first, last + 1):
                node = at_step.get(number)
                if node is None or tid not in node.options:  # it ran alone: nobody else could
                    return False
            return True

        waiting: list[tuple[int, int]] = []
        found = analysis.extend(done_steps[shared - base:] if shared > base else done_steps, fresh, could_run, waiting)
        return found, waiting

    def _plan(self, found: list[tuple[int, int]], waiting: list[tuple[int, int]], path: list[Node]) -> None:
        """Add to the backtrack sets what reverses each race: an initial of the reversal at the decision before
        its first step (and before the acquire of a lock held there); for a race a wait hid, the waiting thread at
        the last decision up to its first step where it could run."""
        analysis, at_step = self.analysis, self.at_step
        numbers, accesses_of = analysis.numbers, analysis.accesses
        holds: dict[str, list[tuple[int, int, int]]] = {}  # per lock, who held it when (for races taking a lock)
        locks = list(analysis.lax.locks) if analysis.lax is not None and found else []

        def holds_of(lock):
            found_holds = holds.get(lock)
            if found_holds is None:
                found_holds = holds[lock] = analysis.lock_holds(lock)
            return found_holds

        for i, j in found:
            starts = [i]
            for access in accesses_of[j]:
                if access.kind == ACQUIRE:
                    before = analysis.blocked_since(i, j, holds)
                    # j starts with a blocking acquire of a lock i's thread held across i: j blocks until that
                    # thread lets go, so only before its acquire can j go first
                    lock = analysis.blocking_acquire(j)
                    starts = before if lock is not None and analysis.held_by_own_thread(lock, i, holds) else [
                        *starts, *before]
                    break
            if locks:  # acquires no longer ordered by themselves: where the reversal's threads can take the lock
                found_at, only = held_on_the_way(i, j, analysis.tids, analysis.before, holds_of,
                                                 analysis.blocking_acquire, locks)
                starts = [*(at for at in starts if not (only and at == i)), *(at for at in found_at
                                                                             if at not in starts)]
            for at in starts:
                node = at_step.get(numbers[at])
                # None: the step ran alone, there was no other option at that point; nothing left to add where
                # every option is to be tried already
                if node is not None and node.backtrack != (1 << len(node.options)) - 1:
                    self._reverse(node, analysis.initials(at, j))
        if waiting:
            tids = analysis.tids
            first = path[0].step if path else 0
            for i, j in waiting:
                tid = tids[j]
                # Where it could not run, trying everyone (Flanagan and Godefroid's fallback) only repeats classes,
                # since what lets it run there is another race, reversed on its own.
                for number in range(numbers[i], first - 1, -1):
                    node = at_step.get(number)
                    if node is not None and tid in node.options:
                        self._reverse(node, [tid])
                        break

    @staticmethod
    def _reverse(node: Node, starters: list[int]) -> None:
        """Make sure a thread that can start the reversal of a race is among the options to try at ``node``."""
        options = node.options
        wanted = 0
        for tid in starters:
            if tid in options:
                wanted |= 1 << options.index(tid)
        if not wanted:
            node.backtrack |= (1 << len(options)) - 1  # none of them could run there: try everyone
        elif not node.backtrack & wanted:
            for index in bits_of(wanted):  # the first in option order that is awake
                if options[index] not in node.sleep:
                    node.backtrack |= 1 << index
                    return

    def _advance(self, path: list[Node]) -> None:
        """The next execution: the deepest decision of ``path`` with an option left takes it; none: done."""
        for depth in range(len(path) - 1, -1, -1):
            node = path[depth]
            if node.backtrack & ~node.done:
                left, cut = node.pending(self.bound)
                self.cut += cut
                if left:
                    node.chosen = left[0]
                    node.done |= 1 << left[0]
                    self.next_prefix = path[: depth + 1]
                    return
        self.next_prefix = None
        self.exhausted = self.cut == 0
