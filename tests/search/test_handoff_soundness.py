"""dpor is sound at the edges of what racecheck sees: on generated programs whose reader thread hands shared objects
to the standard library (json, pickle, copy, urllib.parse, ``str.join``, ``sorted``, the dict/list/set
constructors, ``vars()``, ``getattr`` with a computed name, ``functools.reduce``, itertools, logging, ``repr``,
``str``) while a writer thread changes them, dpor with memory watching reaches every outcome that unbounded dfs with a
point before every line of the threads (``preempt=[module], memory=False``: the reference, which needs no record of
any access) reaches, and finishes (``vars(obj)``'s answer, the object's own attribute dict, is followed as the
object's attributes). A planted bug (hand-offs record nothing) fails it. Programs: ``handoff_programs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.control import handoff
from racecheck.search import coverage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handoff_programs  # noqa: E402

CAP = 5_000


def explore(fn, strategy: str, **options) -> tuple[racecheck.Result, set]:
    """Every schedule ``strategy`` runs, with the outcome each one left."""
    outcomes: set = set()
    real = coverage.Coverage.count

    def count(self, run, index, result, done=False):
        outcomes.add(run.resources.get("outcome"))
        return real(self, run, index, result, done)

    coverage.Coverage.count = count
    try:
        result = racecheck.explore(fn, strategy=strategy, preemption_bound=None, schedules=CAP, max_failures=1000,
                                   shrink_budget=0, race_budget=0, **options)
    finally:
        coverage.Coverage.count = real
    return result, outcomes


def differences(program: tuple) -> list[str]:
    """What dpor got wrong on ``program`` against the line-point reference (empty: nothing)."""
    fn = handoff_programs.load(program)
    reference, expected = explore(fn, "dfs", memory=False, preempt=[fn.threads_module])
    assert reference.exhausted, f"the reference did not finish in {reference.schedules} schedules"
    reduced, reached = explore(fn, "dpor")
    wrong = []
    if None in expected or None in reached:
        wrong.append("a schedule left no outcome")
    if not reduced.exhausted:
        wrong.append(f"dpor did not finish ({reduced.schedules} schedules): {reduced.no_proof}")
    if reduced.exhausted and not expected <= reached:
        missed = sorted(expected - reached)
        wrong.append(f"{len(missed)} outcome(s) line points reached and dpor did not, e.g. {missed[:1]}")
    if reduced.schedules > reference.schedules:
        wrong.append(f"schedules: dpor {reduced.schedules} > the reference's {reference.schedules}")
    return wrong


writes = st.lists(st.sampled_from(sorted(handoff_programs.WRITES)), min_size=1, max_size=2, unique=True)
reads = st.lists(st.sampled_from(sorted(handoff_programs.READS)), min_size=1, max_size=2, unique=True)
programs = st.tuples(writes.map(tuple), reads.map(tuple))


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_dpor_reaches_what_line_points_reach_at_the_edges(program):
    wrong = differences(program)
    assert not wrong, f"{program}: {wrong}"


# Every reader once, against the writes it can see change.
EVERY_READER = [
    (("dict_two",), ("json",)), (("nested",), ("json_nested",)), (("obj_two",), ("pickle",)),
    (("obj_new",), ("pickle",)), (("dict_new",), ("copy",)), (("nested",), ("deepcopy",)),
    (("dict_two",), ("urlencode",)), (("list_two",), ("join",)), (("dict_drop",), ("sorted",)),
    (("list_append",), ("constructors",)), (("obj_two",), ("vars",)), (("list_two",), ("getattr",)),
    (("list_two",), ("reduce",)), (("list_append", "dict_new"), ("itertools",)), (("dict_two",), ("logging",)),
    (("obj_new", "obj_two"), ("vars_key",)), (("obj_new",), ("vars",)),
    (("dict_two",), ("repr",)), (("nested",), ("str_obj",)),
]


@pytest.mark.parametrize("program", EVERY_READER, ids=lambda p: "+".join(p[0]) + "/" + "+".join(p[1]))
def test_every_reader(program):
    wrong = differences(program)
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_dpor_reaches_what_line_points_reach_at_the_edges_many(program):
    wrong = differences(program)
    assert not wrong, f"{program}: {wrong}"


@pytest.mark.parametrize("program", [(("dict_two",), ("json",)), (("obj_new",), ("pickle",)),
                                     (("nested",), ("deepcopy",)), (("list_two",), ("reduce",))],
                         ids=lambda p: p[1][0])
def test_a_planted_bug_is_caught(program, monkeypatch):
    """Hand-offs that record nothing: dpor claims exhaustion and misses what the callee saw."""
    monkeypatch.setattr(handoff, "planted_off", [True])
    wrong = differences(program)
    assert any("line points reached and dpor did not" in w for w in wrong), wrong
