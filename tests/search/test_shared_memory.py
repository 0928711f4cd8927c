"""Points that matter (issue 47, item 6): the sampling strategies' decisions at memory steps no other thread can
conflict with (``racecheck.search.shared_memory``) neither count for PCT's change points nor switch the random walk,
and keep their thread's priority under POS.

What is learned from traces, by the dependency relation; and on a program whose threads make many accesses to
memory only they touch, around a lost update on one shared attribute, the schedules to the failure stay within 2x
of the same program without those accesses (a planted PCT that counts every decision is far off)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
import racecheck
from racecheck.runtime import relation
from racecheck.runtime.access import MEMORY_OBJ, READ, WRITE, file_obj, memory, on
from racecheck.runtime.relation import RELATION, commute
from racecheck.runtime.steps import Kind
from racecheck.runtime.trace import TraceEvent
from racecheck.search import shared_memory
from racecheck.search.shared_memory import SharedMemory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
import classic_bugs  # noqa: E402

A, B = memory("Box#1.a"), memory("Box#2.b")


def _trace(*steps: tuple[int, tuple]) -> list[TraceEvent]:
    return [TraceEvent(i, tid, "op", "", "", access) for i, (tid, access) in enumerate(steps)]


def test_memory_one_thread_touches_is_quiet_once_seen():
    shared = SharedMemory()
    assert not shared.quiet(on(A, WRITE)), "memory no run has seen is never quiet"
    shared.learn(_trace((1, on(A, WRITE)), (1, on(A, READ)), (2, on(B, WRITE))))
    assert shared.quiet(on(A, WRITE)) and shared.quiet(on(B, READ))
    assert shared.quiet(on(A, READ) + on(B, WRITE))


def test_memory_two_threads_only_read_stays_quiet():
    shared = SharedMemory()
    shared.learn(_trace((1, on(A, READ)), (2, on(A, READ))))
    assert shared.quiet(on(A, READ))


def test_a_write_and_another_threads_access_make_it_shared_for_good():
    shared = SharedMemory()
    shared.learn(_trace((1, on(A, WRITE)), (0, on(B, WRITE))))
    shared.learn(_trace((2, on(A, READ))))
    assert not shared.quiet(on(A, READ)) and not shared.quiet(on(A, WRITE))
    assert not shared.quiet(on(B, READ) + on(A, READ)), "one shared object in a step makes it count"
    shared.learn(_trace((1, on(A, WRITE))))
    assert not shared.quiet(on(A, WRITE))
    assert shared.quiet(on(B, READ))


def test_what_is_not_named_memory_always_counts():
    shared = SharedMemory()
    shared.learn(_trace((1, on(file_obj("/a"), WRITE)), (1, on(MEMORY_OBJ, WRITE))))
    assert not shared.quiet(on(file_obj("/a"), WRITE))
    assert not shared.quiet(on(MEMORY_OBJ, WRITE))
    assert not shared.quiet(())  # a point that names nothing (a bare racecheck.point()) touches anything


def test_sharing_is_read_from_the_relation():
    with relation.planted(RELATION.with_rows(*commute(Kind.READ, Kind.WRITE))):
        shared = SharedMemory()
        shared.learn(_trace((1, on(A, WRITE)), (2, on(A, READ))))
    assert shared.quiet(on(A, READ)), "with reads and writes made to commute, nothing is shared"


class Box:
    pass


def _lost_update(noise: int) -> None:
    shared = Box()
    shared.count = 0
    scratch = [Box(), Box()]

    def work(i: int) -> None:
        mine = scratch[i]
        mine.n = 0
        for _ in range(noise):  # memory only this thread touches, before and after the race
            mine.n += 1
        value = shared.count
        shared.count = value + 1
        for _ in range(noise):
            mine.n += 1

    classic_bugs.run_all(lambda: work(0), lambda: work(1))
    assert shared.count == 2


def lost_update() -> None:
    _lost_update(0)


def lost_update_in_private_work() -> None:
    _lost_update(40)


def _found(fn, strategy: str, seeds: int = 10, cap: int = 200) -> list[float]:
    found = []
    for seed in range(seeds):
        result = racecheck.explore(fn, strategy=strategy, schedules=cap, seed=seed, shrink_budget=0, race_budget=0)
        found.append(float("inf") if result.ok else result.failure.schedule_index + 1)
    return found


@pytest.mark.parametrize("strategy", ["pct", "random", "pos"])
def test_private_memory_does_not_dilute_the_search(strategy):
    plain = statistics.median(_found(lost_update, strategy))
    noisy = statistics.median(_found(lost_update_in_private_work, strategy))
    assert noisy <= 2 * plain, (noisy, plain)


def test_a_pct_that_counts_every_decision_is_diluted(monkeypatch):
    """The check above catches PCT counting the private accesses (as it did before): median far beyond 2x."""
    plain = statistics.median(_found(lost_update, "pct"))
    monkeypatch.setattr(shared_memory.SharedMemory, "quiet", lambda self, access: False)
    cap = int(4 * plain)
    noisy = statistics.median(_found(lost_update_in_private_work, "pct", cap=cap))
    assert noisy > 2 * plain, (noisy, plain)
