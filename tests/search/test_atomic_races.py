"""Data races that mean something (issue 49): two atomic additions to one builtin container from two threads
(``results.append(x)``, ``seen.add(x)``, CPython runs each as one operation and loses neither) are no data race by
default, since only their order is open and the program's own checks see that order in every schedule explored;
``atomic_races=True`` reports them. ``data_races="fail"`` passes the correct twin of every program a user tried and
still fails its racy twin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import racecheck
from racecheck.control.memory_effects import atomic_addition

sys.path.insert(0, str(Path(__file__).resolve().parent))
import twin_programs  # noqa: E402

TWINS = ["job_queue", "latch", "dataclass_stats", "slots_stats", "registry", "ttl_cache", "session"]


@pytest.mark.parametrize("strategy", ["pct", "dpor"])
@pytest.mark.parametrize("name", TWINS)
def test_fail_passes_the_correct_twin_and_fails_the_racy_one(name, strategy):
    correct = racecheck.explore(getattr(twin_programs, name), strategy=strategy, schedules=120, data_races="fail")
    assert correct.ok, correct.summary()
    assert not correct.data_races
    racy = racecheck.explore(getattr(twin_programs, name + "_racy"), strategy=strategy, schedules=120,
                             data_races="fail")
    assert not racy.ok, racy.summary()


@pytest.mark.parametrize("name", TWINS)
def test_the_correct_twins_pass_because_of_the_rule(name):
    """With atomic additions reported, each correct twin has a race between two of them, and only such races."""
    shown = racecheck.explore(getattr(twin_programs, name), schedules=60, atomic_races=True, race_budget=0)
    assert shown.data_races, shown.summary()
    assert all(r.first.op == r.second.op == "write" and r.obj.startswith(("list", "set", "deque"))
               for r in shown.data_races), shown.summary()


def test_the_checkpoint_manager_twins():
    pytest.importorskip("torch")
    correct = racecheck.explore(twin_programs.checkpoints, strategy="dpor", schedules=50, data_races="fail")
    assert correct.ok and correct.exhausted, correct.summary()
    racy = racecheck.explore(twin_programs.checkpoints_racy, strategy="dpor", schedules=50, data_races="fail")
    assert not racy.ok


class _PyHashed:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return self is other


def test_which_calls_are_atomic_additions():
    assert atomic_addition([], "append", (1,), {})
    assert atomic_addition([], "extend", ([1, 2],), {})
    assert not atomic_addition([], "extend", (iter([1, 2]),), {})  # an iterator runs Python code as it goes
    assert not atomic_addition([], "pop", (), {})  # a removal: which thread got which item is the order
    assert atomic_addition(set(), "add", ("k",), {})
    assert not atomic_addition(set(), "add", (_PyHashed(),), {})  # its __hash__ runs Python code
    assert not atomic_addition({}, "setdefault", ("k", 1), {})  # the first one wins: the order is observed
    assert not atomic_addition([], "__len__", (), {})


def collect_then_count() -> None:
    import threading

    results: list[int] = []

    def work(i: int) -> None:
        results.append(i)
        racecheck.point("after append")
        _ = len(results)  # reads what another thread adds, unordered

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_a_read_of_what_another_thread_added_is_still_a_race():
    result = racecheck.explore(collect_then_count, schedules=40, race_budget=0)
    ops = {frozenset({r.first.op, r.second.op}) for r in result.data_races}
    assert ops == {frozenset({"write", "read all of"})}, result.summary()
    shown = racecheck.explore(collect_then_count, schedules=40, race_budget=0, atomic_races=True)
    assert frozenset({"write"}) in {frozenset({r.first.op, r.second.op}) for r in shown.data_races}


def test_a_failure_on_an_atomic_pair_replays_in_any_process():
    failed = racecheck.explore(twin_programs.registry, schedules=20, data_races="fail", atomic_races=True)
    assert not failed.ok
    for options in ({"atomic_races": True}, {}):  # the token says it counted atomic additions
        again = racecheck.replay(twin_programs.registry, failed.failure.token, **options)
        assert again.failure is not None and again.failure.message == failed.failure.message


def test_the_option_is_checked():
    with pytest.raises(TypeError, match="atomic_races"):
        racecheck.Config(atomic_races="yes")
