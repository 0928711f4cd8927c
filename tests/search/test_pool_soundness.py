"""The executor's reduction is sound: dpor with its work queue (a put and a get of different items commute, the
shutdown sentinel only read, raises of the idle count commuting; ``racecheck.sync.work_queue``) reaches every
outcome that dpor reaches with the coarse queue it replaced, where any two queue operations and any two touches of
the idle count conflict: the reference, which explores a superset of the orders (unbounded dfs does not finish on
these programs: 50,000 schedules were not enough for 2 workers and 2 items).

Programs are generated (pool_programs.py): 1-3 workers, 1-3 work items, each item a few operations on a dict
behind one lock and outside it (critical sections that conflict and that commute, a try-acquire, an RLock taken
twice, a lost update, a nested submit), collected by ``map``, by results in order, by ``as_completed`` or after
``shutdown``; memory is watched and there are no marks. Every outcome records which worker ran each item.

A planted bug in the reduction (gets that do not name the queue's head, so two workers' gets commute) makes the
comparison fail, so it can fail. A planted submit whose use of the idle count commutes with a worker's raise was
not caught on these programs (every outcome it should hide was still reached: other conflicts of the same steps
order them), so it is not claimed here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from racecheck.runtime.access import GET, Access
from racecheck.search import coverage
from racecheck.sync import executor
from racecheck.sync.queues import ControlledSimpleQueue
from racecheck.sync.work_queue import WorkQueue

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pool_programs  # noqa: E402

CAP = 2_000  # generated programs whose reference takes more are left out (hypothesis.assume)


class CoarseQueue(WorkQueue):
    """The work queue as it was: every put and get on the queue itself (any two conflict), and a worker that meets
    the sentinel takes it and puts it back."""

    def put(self, item, block=True, timeout=None):
        self._run.schedule(f"put {self._name}", access=self._put_access, skip=1)
        self._qput(item)
        self._puts += 1

    def get(self, block=True, timeout=None):
        item = ControlledSimpleQueue.get(self, block, timeout)
        self._gets += 1
        return item

    def get_work(self):
        item = self.get()
        if item is None:
            self.put(None)
        return item


class HeadBlindQueue(WorkQueue):
    """Planted: a get names only the slot it empties, not the queue's head, so two workers' gets of different items
    commute and which worker takes which item is not explored."""

    def _taking(self):
        return (Access(self._slot(self._gets), GET),)


def explore(fn, cap: int = 2 * CAP) -> tuple[racecheck.Result, set]:
    outcomes: set = set()
    real = coverage.Coverage.count

    def count(self, run, index, result, done=False):
        outcomes.add(run.resources.get("outcome"))
        return real(self, run, index, result, done)

    coverage.Coverage.count = count
    try:
        result = racecheck.explore(fn, strategy="dpor", schedules=cap, max_failures=1000, shrink_budget=0,
                                   race_budget=0)
    finally:
        coverage.Coverage.count = real
    return result, outcomes


def reference(fn, monkeypatch, cap: int = CAP) -> tuple[racecheck.Result, set]:
    with monkeypatch.context() as m:
        m.setattr(executor, "WorkQueue", CoarseQueue)
        m.setattr(executor, "ENTRY", executor.WRITE)
        return explore(fn, cap)


def differences(program: tuple, monkeypatch, cap: int = CAP) -> list[str] | None:
    """What the reduced search got wrong on ``program`` (empty: nothing; None: the reference did not finish)."""
    fn = pool_programs.make_test(program)
    full, seen = reference(fn, monkeypatch, cap)
    if not full.exhausted:
        return None
    reduced, reached = explore(fn)
    wrong = []
    if not reduced.exhausted:
        wrong.append(f"dpor did not finish in {reduced.schedules} schedules")
    if {f.kind for f in full.failures} != {f.kind for f in reduced.failures}:
        wrong.append(f"failures: reference {full.failures}, reduced {reduced.failures}")
    missed = seen - reached
    if missed:
        wrong.append(f"{len(missed)} outcome(s) the reference reached and dpor did not, e.g. {sorted(missed)[:1]}")
    if reached - seen:
        wrong.append("dpor reached an outcome the reference did not (the reference is not a superset)")
    if reduced.schedules > full.schedules:
        wrong.append(f"schedules: {reduced.schedules} > the reference's {full.schedules}")
    return wrong


ops = st.lists(st.sampled_from(pool_programs.ITEM_OPS), min_size=1, max_size=2).map(tuple)
programs = st.tuples(st.integers(1, 3), st.sampled_from(pool_programs.COLLECT),
                     st.lists(ops, min_size=1, max_size=2).map(tuple))
HEALTH = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much]


@settings(max_examples=10, deadline=None, suppress_health_check=HEALTH, database=None)  # 150 more under -m slow
@given(program=programs)
def test_the_executor_reduction_reaches_every_outcome_on_generated_pools(program, monkeypatch):
    found = differences(program, monkeypatch)
    assume(found is not None)
    assert found == [], program


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=150, deadline=None, suppress_health_check=HEALTH, database=None)
@given(program=st.tuples(st.integers(1, 3), st.sampled_from(pool_programs.COLLECT),
                 st.lists(ops, min_size=1, max_size=3).map(tuple)))
def test_the_executor_reduction_reaches_every_outcome_on_more_generated_pools(program, monkeypatch):
    found = differences(program, monkeypatch, cap=20_000)
    assume(found is not None)
    assert found == [], program


# The planted bug is caught on each of these (3 outcomes of the reference's missed on each).
PLANTED_PROGRAMS = [
    (2, "result_in_order", (("locked_read",), ("locked_inc",))),
    (2, "map", (("plain_inc",), ("plain_read",))),
    (3, "as_completed", (("locked_own",), ("locked_own",))),
]


def _caught(monkeypatch) -> bool:
    return any(differences(program, monkeypatch) for program in PLANTED_PROGRAMS)


def test_the_planted_programs_pass_without_a_planted_bug(monkeypatch):
    assert not _caught(monkeypatch)


def test_gets_that_do_not_name_the_head_are_caught(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(executor, "WorkQueue", HeadBlindQueue)
        planted_result = [explore(pool_programs.make_test(p))[1] for p in PLANTED_PROGRAMS]
    assert any(reference(pool_programs.make_test(p), monkeypatch)[1] - got
               for p, got in zip(PLANTED_PROGRAMS, planted_result, strict=True))


def test_a_locked_pool_is_proved_in_at_most_half_the_schedules_of_the_coarse_queue(monkeypatch):
    # issue 49's correctly locked stats fed by a pool of 2 (docs/performance.md: 248 schedules before, 79 after)
    fn = pool_programs.make_test((2, "map", (("locked_inc",), ("locked_inc",))))
    before, _ = reference(fn, monkeypatch)
    after, _ = explore(fn)
    assert after.ok and after.exhausted and before.exhausted
    assert 2 * after.schedules <= before.schedules, (after.schedules, before.schedules)
