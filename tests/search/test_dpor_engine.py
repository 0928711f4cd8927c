"""dpor against unbounded dfs, through the real engine: on generated programs (threads doing lock, queue, event,
future and file operations on the fake filesystem, and named points over shared memory) and on the classic bugs,
dpor must find every failure dfs finds, reach every outcome dfs reaches, count the same interleavings, run no more
schedules, and both must finish their space. dfs runs every schedule, so whatever it sees is what the program can
do; dpor's claim is that one schedule per class of equivalent interleavings sees the same.

A planted bug in the dependency relation or in the sleep sets makes the comparison fail (the last tests), so it
can fail. More generated programs, and the executor classics (dfs runs 10^5 schedules there), are marked slow.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from racecheck.fakefs.spec import FakeFS
from racecheck.runtime import relation
from racecheck.runtime.relation import RELATION, commute
from racecheck.runtime.steps import Kind
from racecheck.search import coverage, dpor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
import classic_bugs  # noqa: E402
import dpor_programs  # noqa: E402

DFS_CAP = 20_000
SMALL = 3_000  # generated programs whose dfs space is larger are left out (hypothesis.assume)


def explore(fn, strategy: str, fs: str | None = None, cap: int = DFS_CAP,
            memory: bool = False) -> tuple[racecheck.Result, set]:
    """Every schedule of ``fn`` that ``strategy`` runs, with the outcome each counted schedule left in its run."""
    outcomes: set = set()
    real = coverage.Coverage.count

    def count(self, run, index, result, done=False):
        outcomes.add(run.resources.get("outcome"))
        return real(self, run, index, result, done)

    coverage.Coverage.count = count
    try:
        # memory=False by default: the relation over synchronisation, files and marked points is compared here,
        # class for class; memory watching's on generated programs by test_memory_soundness.py (outcomes and
        # failures), and on the classic bugs below
        result = racecheck.explore(fn, strategy=strategy, preemption_bound=None, schedules=cap, fs=fs,
                                   max_failures=1000, shrink_budget=0, race_budget=0, memory=memory)
    finally:
        coverage.Coverage.count = real
    return result, outcomes


def kinds(result: racecheck.Result) -> set:
    return {(f.kind, type(f.exception).__name__) for f in result.failures}


def differences(fn, fs: str | None = None, cap: int = DFS_CAP, memory: bool = False) -> list[str] | None:
    """What dpor got wrong against unbounded dfs on ``fn`` (empty: nothing; None: dfs did not finish in ``cap``
    schedules, so there is nothing to compare with)."""
    full, seen = explore(fn, "dfs", fs, cap, memory)
    if not full.exhausted:
        return None
    reduced, reached = explore(fn, "dpor", fs, cap, memory)
    wrong = []
    if not reduced.exhausted:
        wrong.append(f"dpor did not finish in {reduced.schedules} schedules")
    if kinds(full) != kinds(reduced):
        wrong.append(f"failures: dfs {sorted(kinds(full))}, dpor {sorted(kinds(reduced))}")
    if seen != reached:
        missed = sorted(seen - reached, key=str)
        wrong.append(f"{len(missed)} outcome(s) dfs reached and dpor did not, e.g. {missed[:1]}")
    if full.interleavings != reduced.interleavings:
        wrong.append(f"interleavings: dfs {full.interleavings}, dpor {reduced.interleavings}")
    if reduced.schedules > full.schedules:
        wrong.append(f"schedules: dpor {reduced.schedules} > dfs {full.schedules}")
    return wrong


def program_test(program: tuple):
    return dpor_programs.make_test(program), "posix" if dpor_programs.uses_files(program) else None


operations = st.sampled_from(dpor_programs.ALL_OPS)


def programs(most: int):
    return st.lists(st.lists(operations, min_size=1, max_size=3).map(tuple), min_size=2, max_size=3).map(
        tuple).filter(lambda p: sum(map(len, p)) <= most)


def _check(program: tuple, cap: int) -> None:
    found = differences(*program_test(program), cap=cap)
    assume(found is not None)
    assert found == [], program


HEALTH = [HealthCheck.filter_too_much, HealthCheck.too_slow]


@settings(max_examples=15, deadline=None, suppress_health_check=HEALTH, database=None)  # 300 more under -m slow
@given(programs(3))
def test_dpor_sees_what_unbounded_dfs_sees_on_generated_programs(program):
    _check(program, SMALL)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 300 programs, each through unbounded dfs: ~10 minutes alone, more beside other work
@settings(max_examples=300, deadline=None, suppress_health_check=HEALTH, database=None)
@given(programs(5))
def test_dpor_sees_what_unbounded_dfs_sees_on_more_generated_programs(program):
    _check(program, DFS_CAP)


EXECUTOR_CLASSICS = ("futures_order_violation", "futures_order_fixed")  # 10^4-10^5 dfs schedules each
CLASSICS = sorted(name for pair in classic_bugs.BUGS.values() for name in (pair[0].__name__, pair[1].__name__))


# Reads shared memory before its first point (``if not state["ready"]``, outside the condition's lock), which the
# reduction assumes no program does (docs/dependency.md): the consumer's first step commutes with the producer's,
# so dpor runs one of the two orders where dfs runs both. Its deadlock is found all the same.
BREAKS_THE_ASSUMPTION = {"missed_wakeup": "interleavings: dfs 3, dpor 2"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in EXECUTOR_CLASSICS else n
                                  for n in CLASSICS])
def test_dpor_sees_what_unbounded_dfs_sees_on_the_classic_bugs(name):
    expected = [BREAKS_THE_ASSUMPTION[name]] if name in BREAKS_THE_ASSUMPTION else []
    assert differences(getattr(classic_bugs, name), cap=200_000) == expected


@pytest.mark.parametrize("name", [n for n in CLASSICS if n not in EXECUTOR_CLASSICS])
def test_with_memory_watched_dpor_sees_what_unbounded_dfs_sees_on_the_classic_bugs(name):
    # Class for class, as above, with every shared memory access a point. missed_wakeup's early read is a point
    # then, so it keeps no exception; and a bare point's "anything" joins the memory access before it at that
    # access's own point whether or not another thread could run there (lost_update: dfs counted 93 classes where
    # dpor's 89 were all there are, from that alone).
    assert differences(getattr(classic_bugs, name), cap=200_000, memory=True) == []


# Value choices: a fault drawn on the fake filesystem (EIO on the k-th eligible operation, whichever thread makes
# it) is a branch of its own, and a thread that fails stops the run wherever the others were: what they would
# still have done is unknown, so dpor must try them before the steps they could have gone before.
FAULT_PROGRAMS = [
    pytest.param((("write_a", "read_a"), ("remove_a",)), FakeFS(eio={"write"}, fault_window=2), id="eio-writes"),
    pytest.param((("write_a", "read_a"), ("remove_a",)), FakeFS(eio=True, fault_window=2), id="eio-any"),
    pytest.param((("write_a", "listdir"), ("write_b", "read_a")), FakeFS(eio={"write"}, fault_window=2),
                 id="eio-listing"),
]


@pytest.mark.parametrize("program, spec", FAULT_PROGRAMS)
def test_dpor_sees_what_unbounded_dfs_sees_with_faults_drawn(program, spec):
    assert differences(dpor_programs.make_test(program), spec) == []


# A race whose later step takes a lock the earlier step's own thread held across it is reversed only before that
# thread's acquire (dpor.py). These are the acquires the rule must leave alone: a try and a timeout give up while
# the lock is held, a semaphore of two admits a second holder, and a third thread's hold can end before the
# earlier step runs.
LOCK_RULE_PROGRAMS = [
    (("inc0",), ("try_inc0",)),
    (("inc0",), ("inc0_timed",)),
    (("sem_inc",), ("sem_inc", "rw_a")),
    (("inc0",), ("rw_a",), ("inc0",)),
    (("inc0", "inc0"), ("inc0",)),
]


@pytest.mark.parametrize("program", LOCK_RULE_PROGRAMS, ids=lambda p: "+".join("/".join(t) for t in p))
def test_dpor_sees_what_unbounded_dfs_sees_around_held_locks(program):
    assert differences(*program_test(program)) == []


def test_two_threads_writing_their_own_files_are_one_class_in_one_schedule():
    result, _ = explore(dpor_programs.make_test((("write_own",), ("write_own",)), fail_one_in=10**9), "dpor",
                        "posix")
    assert result.ok and result.exhausted and result.interleavings == 1 and result.schedules == 1


# ----- planted bugs: the comparison must catch them ----------------------------------------------------------------

PLANTED_PROGRAMS = [
    (("put",), ("get_nowait",)),
    (("rw_a",), ("rw_a",)),
    (("write_a",), ("read_a",)),
    (("inc0", "rw_b"), ("rw_b",)),
]


def _caught() -> bool:
    return any(differences(*program_test(program), cap=SMALL) for program in PLANTED_PROGRAMS)


def test_the_planted_programs_pass_without_a_planted_bug():
    assert not _caught()


@pytest.mark.parametrize("dropped", ["write", "get"])
def test_a_relation_that_drops_a_conflict_kind_is_caught(monkeypatch, dropped):
    kind = Kind(dropped)
    planted = RELATION.with_rows(*(row for other in Kind for row in commute(kind, other)))
    real_dependent = dpor.dependent
    monkeypatch.setattr(dpor, "dependent", lambda left, right: real_dependent(
        [a for a in left if a.kind != dropped], [b for b in right if b.kind != dropped]))
    with relation.planted(planted):
        assert _caught()


def test_sleep_sets_that_never_wake_are_caught(monkeypatch):
    real = dpor.dependent
    chooser = dpor.DPORChooser
    monkeypatch.setattr(chooser, "_absorb", _never_wake(chooser._absorb, real))
    assert _caught()


def _never_wake(absorb, real):
    """``DPORChooser._absorb`` with the wake-up left out: a thread asleep stays asleep whatever runs."""
    def planted(self, complete):
        asleep = dict(self.sleep)
        absorb(self, complete)
        self.sleep = asleep
    return planted
