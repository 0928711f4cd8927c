"""Memory watching is sound: on generated programs of 2-3 threads sharing plain attributes, dict items, a list, a
set, a module global and a closure variable, with and without a lock, a queue and an event, and with no
``racecheck.point()`` at all, dpor with memory watching reaches every outcome that exhaustive search reaches:

* unbounded dfs at the same granularity (memory watching on): the same outcomes, the same failures, the same
  interleavings, and no more schedules for dpor;
* unbounded dfs with a point before every line and every store to shared state and no memory watching
  (``preempt=[module], memory=False``), the reference the engine had before: every outcome it reaches, dpor reaches.

A planted bug in the memory relation (a read and a write of one piece of memory taken to commute) makes the
comparison fail, so it can fail. More programs behind ``-m slow``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from racecheck.runtime import access as acc
from racecheck.runtime import relation
from racecheck.search import coverage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memory_programs  # noqa: E402

CAP = 20_000


def explore(fn, strategy: str, cap: int = CAP, **options) -> tuple[racecheck.Result, set]:
    """Every schedule ``strategy`` runs, with the outcome each one left."""
    outcomes: set = set()
    real = coverage.Coverage.count

    def count(self, run, index, result, done=False):
        outcomes.add(run.resources.get("outcome"))
        return real(self, run, index, result, done)

    coverage.Coverage.count = count
    try:
        result = racecheck.explore(fn, strategy=strategy, preemption_bound=None, schedules=cap, max_failures=1000,
                                   shrink_budget=0, race_budget=0, **options)
    finally:
        coverage.Coverage.count = real
    return result, outcomes


def differences(program: tuple, cap: int = CAP, lines: bool = False) -> list[str] | None:
    """What dpor with memory watching got wrong on ``program`` (empty: nothing; None: a reference did not finish).
    ``lines``: also against line and store points without memory watching (a much larger space)."""
    fn = memory_programs.load(program)
    full, seen = explore(fn, "dfs", cap)
    if not full.exhausted:
        return None
    by_lines: set = set()
    if lines:
        reference, by_lines = explore(fn, "dfs", cap, memory=False, preempt=[fn.threads_module])
        if not reference.exhausted:
            return None
    reduced, reached = explore(fn, "dpor", cap)
    wrong = []
    if not reduced.exhausted:
        wrong.append(f"dpor did not finish in {reduced.schedules} schedules")
    if None in seen or None in reached:
        wrong.append("a schedule left no outcome")
    if seen != reached:
        missed = sorted(seen - reached, key=str)
        wrong.append(f"{len(missed)} outcome(s) dfs reached and dpor did not, e.g. {missed[:1]}")
    if not by_lines <= reached:
        missed = sorted(by_lines - reached, key=str)
        wrong.append(f"{len(missed)} outcome(s) line points reached and dpor did not, e.g. {missed[:1]}")
    if {f.kind for f in full.failures} != {f.kind for f in reduced.failures}:
        wrong.append("failures differ")
    if full.interleavings != reduced.interleavings:
        wrong.append(f"interleavings: dfs {full.interleavings}, dpor {reduced.interleavings}")
    if reduced.schedules > full.schedules:
        wrong.append(f"schedules: dpor {reduced.schedules} > dfs {full.schedules}")
    return wrong


operations = st.sampled_from(sorted(memory_programs.OPS))
programs = st.lists(st.lists(operations, min_size=1, max_size=2).map(tuple), min_size=2, max_size=3).map(tuple)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs)
def test_dpor_with_memory_reaches_what_exhaustive_search_reaches(program):
    wrong = differences(program, cap=3_000)
    assume(wrong is not None)
    assert not wrong, f"{program}: {wrong}"


@pytest.mark.slow
@pytest.mark.timeout(3600)  # programs each through two unbounded dfs references: well over pytest's 600 s
# 100 programs, references capped at 20,000 schedules: with 300 and 100,000 the test ran past an hour (a 3-thread
# program whose line-point reference does not finish pays the whole cap, ~2 minutes, and is then left out)
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(programs)
def test_dpor_with_memory_reaches_what_exhaustive_search_reaches_many(program):
    wrong = differences(program, lines=True, cap=20_000)
    assume(wrong is not None)
    assert not wrong, f"{program}: {wrong}"


FIXED = [
    (("attr_inc",), ("attr_inc",)),
    (("dict_inc",), ("dict_pop",)),
    (("list_append",), ("list_pop", "list_len")),
    (("global_inc",), ("global_inc",)),
    (("cell_inc",), ("cell_inc",)),
    (("locked_inc",), ("attr_inc",)),
    (("put", "set_event"), ("check_event", "get")),
    (("dict_other",), ("dict_read",)),
    (("set_add",), ("set_has",)),
    (("attr_set",), ("attr_b",)),
    (("list_append", "list_first"), ("list_append",)),
    (("attr_set",), ("attr_set",), ("attr_read",)),
    (("locked_inc",), ("locked_inc",)),
    (("locked_inc",), ("try_inc",)),
]


@pytest.mark.parametrize("program", FIXED, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_with_memory_on_chosen_programs(program):
    wrong = differences(program, cap=50_000)
    assert wrong is not None, "dfs did not finish"
    assert not wrong, wrong


SMALLEST = [(("attr_inc",), ("attr_read",)), (("dict_inc",), ("dict_other",)), (("list_append",), ("list_pop",))]


@pytest.mark.parametrize("program", SMALLEST, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_with_memory_reaches_what_line_points_reach(program):
    wrong = differences(program, lines=True)
    assert wrong is not None, "a reference did not finish"
    assert not wrong, wrong


# Against line points, the two-thread programs: with a third thread, a point before every line and store makes a
# space that unbounded dfs does not finish in 200,000 schedules (attr_set+attr_set+attr_read did not).
TWO_THREADS = [program for program in FIXED if len(program) == 2]


@pytest.mark.slow
@pytest.mark.parametrize("program", TWO_THREADS, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_with_memory_reaches_what_line_points_reach_on_chosen_programs(program):
    wrong = differences(program, cap=200_000, lines=True)
    assert wrong is not None, "a reference did not finish"
    assert not wrong, wrong


def test_a_planted_bug_in_the_memory_relation_is_caught(monkeypatch):
    """A read and a write of one piece of memory taken to commute: dpor misses the lost update."""
    with relation.planted(relation.RELATION.with_rows(*relation.commute(acc.READ, acc.WRITE))):
        wrong = differences((("attr_inc",), ("attr_inc",)))
    assert wrong, "the planted bug went unnoticed"


# Both threads take the lock around all they share: the only classes are the orders of the two critical sections.
# dpor must run one schedule per class, not retry the second thread before a step inside the first one's critical
# section, where it could only block on the lock (docs/dependency.md, "A lock held across a race").
LOCKED = [
    (("locked_inc",), ("locked_inc",)),
    (("locked_inc",), ("locked_read",)),
    (("locked_inc", "locked_read"), ("locked_inc",)),
]


@pytest.mark.parametrize("program", LOCKED, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_runs_one_schedule_per_class_where_a_lock_guards_everything_shared(program):
    result, _ = explore(memory_programs.load(program), "dpor")
    assert result.exhausted and result.ok
    assert result.schedules == result.interleavings, (result.schedules, result.interleavings)


def test_a_try_acquire_taken_for_a_blocking_one_is_caught(monkeypatch):
    """The rule that keeps a race's reversal off the steps inside another thread's critical section holds for a
    blocking acquire of a lock only: a try-acquire there gives up instead, which is an outcome of its own. Planted:
    every acquire taken as a blocking one."""
    from racecheck.search import analysis

    def every_acquire_blocks(self, k):
        first = self.accesses[k][0] if self.accesses[k] else None
        return first.obj if first is not None and first.kind == acc.ACQUIRE else None

    monkeypatch.setattr(analysis.Analysis, "blocking_acquire", every_acquire_blocks)
    wrong = differences((("locked_inc",), ("try_inc",)))
    assert wrong, "the planted bug went unnoticed"


# A try-acquire and a blocking acquire of one lock: the held-lock rule must not take a hold that began with a
# try-acquire for one a blocking acquire made (the try could have failed there). Found by 2,000 random programs of
# these operations: each of these lost one class of equivalent interleavings to dfs before the rule looked at how
# the hold began.
MIXED_ACQUIRES = [
    (("locked_read", "locked_inc"), ("try_inc", "dict_read")),
    (("locked_read", "locked_inc"), ("try_inc", "locked_inc")),
    (("get", "try_inc"), ("try_inc", "locked_inc")),
    (("locked_read", "try_inc"), ("locked_read", "locked_read")),
]


@pytest.mark.parametrize("program", MIXED_ACQUIRES, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_with_memory_where_try_and_blocking_acquires_share_a_lock(program):
    wrong = differences(program, cap=5_000)
    assert wrong is not None, "dfs did not finish"
    assert not wrong, wrong


def test_a_held_lock_rule_blind_to_how_the_hold_began_is_caught(monkeypatch):
    """Planted: any hold by the earlier step's own thread counts, a try-acquire's too."""
    from racecheck.search import analysis

    def any_own_hold(self, obj, i, holds):
        lock = holds.get(obj)
        if lock is None:
            lock = holds[obj] = self.lock_holds(obj)
        return any(start < i <= end and holder == self.tids[i] for start, end, holder in lock)

    monkeypatch.setattr(analysis.Analysis, "held_by_own_thread", any_own_hold)
    assert any(differences(program, cap=5_000) for program in MIXED_ACQUIRES), "the planted bug went unnoticed"
