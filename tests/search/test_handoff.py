"""Hand-offs (``racecheck.control.handoff``): a shared object handed to code racecheck does not watch is an access.

Issue 46's five programs (one thread writes two fields of a shared object, the other hands it to json, urlencode,
pickle, deepcopy or ``str.join``): pct and dpor find each, and dpor proves each one's locked twin. Without the
record (planted), dpor's "exhausted" on them is a false proof, so these tests can fail. Then: what a callee whose
effect is unknown records (every access to the object conflicts with it, keys it added included), the data-race
report naming the callee, and ``vars(obj)``, whose answer racecheck cannot follow, leaving no proof.
"""

from __future__ import annotations

import operator
import sys
import threading
from pathlib import Path

import pytest
import racecheck
from racecheck.control import handoff
from racecheck.runtime import relation
from racecheck.runtime.steps import Kind, ObjKind

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handoff_programs  # noqa: E402

FIVE = handoff_programs.FIVE
QUIET = {"shrink_budget": 0, "race_budget": 0}


@pytest.mark.parametrize("program", FIVE, ids=lambda p: p.__name__)
def test_pct_and_dpor_find_each_of_the_five(program):
    found = racecheck.explore(program, strategy="pct", schedules=200, **QUIET)
    assert found.failures, "pct did not find it"
    assert found.failures[0].schedule_index <= 10, found.failures[0].schedule_index
    found = racecheck.explore(program, strategy="dpor", schedules=200, **QUIET)
    assert found.failures, "dpor did not find it"
    assert not found.exhausted or found.failures


@pytest.mark.parametrize("program", FIVE, ids=lambda p: p.__name__)
def test_dpor_proves_each_locked_twin(program):
    result = racecheck.explore(handoff_programs.locked_twin(program), strategy="dpor", schedules=200, **QUIET)
    assert result.ok and result.exhausted, result.summary()
    assert result.schedules <= 4, result.schedules


@pytest.mark.parametrize("program", FIVE, ids=lambda p: p.__name__)
def test_without_the_record_dpor_claims_a_false_proof(program, monkeypatch):
    """The planted bug: hand-offs record nothing, and dpor is back to 'exhausted' on a racy program."""
    monkeypatch.setattr(handoff, "planted_off", [True])
    result = racecheck.explore(program, strategy="dpor", schedules=200, **QUIET)
    assert result.ok and result.exhausted


def test_a_data_race_names_the_hand_off():
    result = racecheck.explore(handoff_programs.json_dumps, strategy="dpor", schedules=50, **QUIET)
    lines = [race.describe() for race in result.data_races]
    assert any("read all of dict#1 via json.dumps @" in line and "handoff_programs.py:" in line for line in lines), \
        lines


def test_the_hand_off_relation_row():
    """A hand-off conflicts with every kind of access to the same piece, either way, and with nothing else."""
    rel = relation.active()
    for kind in Kind:
        assert rel.order(Kind.HANDOFF, kind, ObjKind.MEMORY) == relation.Order.REVERSIBLE
        assert rel.order(kind, Kind.HANDOFF, ObjKind.MEMORY) == relation.Order.REVERSIBLE
    assert rel.word(handoff_programs_obj(), Kind.HANDOFF) == "hand off"


def handoff_programs_obj():
    from racecheck.runtime.access import memory

    return memory("dict#1")


def _unknown_setitem() -> None:
    """A callee whose effect racecheck does not know (``operator.setitem``) changes a shared dict."""
    d = {"a": 0}
    seen = []

    def other():
        seen.append(d["a"])

    t = threading.Thread(target=other)
    t.start()
    operator.setitem(d, "a", 1)
    t.join()
    assert seen == [1], seen  # fails only where the other thread goes first: a reversal of the hand-off


def _unknown_adds_a_key() -> None:
    """An unknown callee adds a key another thread looks for: the key it added is recorded as written."""
    d = {"a": 0}
    seen = []

    def other():
        seen.append(d.get("z"))

    t = threading.Thread(target=other)
    t.start()
    operator.setitem(d, "z", 1)
    t.join()
    assert seen == [1], seen


@pytest.mark.parametrize("program", [_unknown_setitem, _unknown_adds_a_key], ids=lambda p: p.__name__)
def test_a_callee_of_unknown_effect_conflicts_with_every_access_to_what_it_was_handed(program):
    result = racecheck.explore(program, strategy="dpor", schedules=50, **QUIET)
    assert result.failures, "dpor missed the hand-off's conflict"
    assert result.failures[0].schedule_index > 0
    assert "operator.setitem" in result.coverage.text(), result.coverage.text()


class Settings:
    retries = 0


def _handed_to_vars() -> None:
    def other():
        Settings.retries = 1

    t = threading.Thread(target=other)
    t.start()
    value = vars(Settings)["retries"]
    t.join()
    assert value in (0, 1)


def test_an_alias_racecheck_cannot_follow_leaves_no_proof():
    """``vars(cls)`` hands back a read-only view of a class's attributes, which no hook watches: no strategy may
    say exhausted, and the verdict and the coverage line say why."""
    for strategy in ("dpor", "dfs", "pct"):
        result = racecheck.explore(_handed_to_vars, strategy=strategy, schedules=200, **QUIET)
        assert result.ok and not result.exhausted, (strategy, result.summary())
        assert "could not see into without a record (vars x" in result.no_proof, result.no_proof
        assert "vars x" in result.coverage.text()


def _attributes_as_a_dict() -> None:
    """``vars(obj)`` is the object's own attribute dict: read as a dict, its items are the object's attributes."""
    obj = handoff_programs.Pair()
    seen = []

    def other():
        obj.a = 1
        obj.c = 1

    t = threading.Thread(target=other)
    t.start()
    attributes = vars(obj)
    seen.append(attributes["a"])
    seen.append("c" in attributes)
    seen.append(len(attributes))
    t.join()
    assert seen == [1, True, 3], seen  # fails unless the other thread ran first: a reversal


def test_an_objects_attribute_dict_is_followed():
    result = racecheck.explore(_attributes_as_a_dict, strategy="dpor", schedules=200, max_failures=20, **QUIET)
    assert result.exhausted and not result.no_proof, result.summary()
    outcomes = {str(f.exception).split(",")[0] for f in result.failures}
    assert result.failures and result.interleavings >= 3, (result.interleavings, outcomes)


def test_immutable_arguments_and_private_results_record_nothing():
    """``json.dumps`` of a tuple of ints, and of nothing shared, is no point: one schedule for dpor."""

    def program():
        t = threading.Thread(target=lambda: None)
        t.start()
        handoff_programs.json.dumps((1, 2, "x"))
        t.join()

    result = racecheck.explore(program, strategy="dpor", schedules=50, **QUIET)
    assert result.exhausted and result.schedules == 1


def test_without_the_keys_it_added_the_unknown_callee_is_missed(monkeypatch):
    """The record of what an unknown callee added is what orders it with a look for that key (planted: none)."""
    monkeypatch.setattr(handoff, "_added", lambda watch, before, label: ())
    result = racecheck.explore(_unknown_adds_a_key, strategy="dpor", schedules=50, **QUIET)
    assert result.ok and result.exhausted


def _excluded_reader(use_class: bool) -> None:
    import handoff_excluded

    d = {"a": 0, "b": 0}

    def write():
        d["a"] = 1
        d["b"] = 1

    other = threading.Thread(target=write)
    other.start()
    pair = handoff_excluded.Snapshot(d).pair if use_class else handoff_excluded.snapshot(d)
    other.join()
    assert pair[0] == pair[1], pair


@pytest.mark.parametrize("use_class", [False, True], ids=["function", "class"])
def test_a_module_left_out_with_exclude_is_a_hand_off(use_class):
    def program():
        _excluded_reader(use_class)

    result = racecheck.explore(program, strategy="dpor", schedules=100, exclude=["handoff_excluded"], **QUIET)
    assert result.failures, result.summary()
    called = "handoff_excluded.Snapshot x" if use_class else "handoff_excluded.snapshot x"
    assert called in result.coverage.text(), result.coverage.text()
