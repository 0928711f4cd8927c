"""``racecheck.point(name, on=obj)``: a point says what the code around it touches, so dpor orders only the points
that can interfere. Bare points conflict with each other (plain memory, sound by default); points on different
objects commute; points on one object, or on a controlled lock and that lock's operations, conflict."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest
import racecheck


def _two_threads(first, second) -> None:
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _classes(fn) -> int:
    result = racecheck.explore(fn, strategy="dpor", schedules=10_000)
    assert result.ok and result.exhausted, result.summary()
    return result.interleavings


def _points(on_first, on_second):
    def program() -> None:
        def work(on):
            return lambda: [racecheck.point("step", on=on) for _ in range(2)]

        _two_threads(work(on_first()), work(on_second()))

    return program


class Box:
    """A plain object a point can name."""


@pytest.mark.parametrize("objects, commute", [
    (lambda: (None, None), False),                   # bare points: plain memory, may touch anything
    (lambda: ("a", "b"), True),                      # named states
    (lambda: ("a", "a"), False),
    (lambda: (Box(), Box()), True),                  # two objects
    (lambda: ((box := Box()), box), False),          # one object
])
def test_points_commute_exactly_when_they_name_different_state(objects, commute):
    chosen = objects()
    classes = _classes(_points(lambda: chosen[0], lambda: chosen[1]))
    assert (classes == 1) == commute, classes


def test_a_point_on_a_lock_conflicts_with_that_locks_operations_only():
    def program(same: bool) -> None:
        guarded, other = threading.Lock(), threading.Lock()

        def marker() -> None:
            racecheck.point("look", on=guarded)

        def locker() -> None:
            with guarded if same else other:
                pass

        _two_threads(marker, locker)

    assert _classes(lambda: program(True)) > 1
    assert _classes(lambda: program(False)) == 1


def test_a_point_on_a_future_conflicts_with_that_futures_operations_only():
    # a future names what its operations touch (its controlled condition) through the same contract as a lock
    def program(same: bool) -> None:
        watched, other = concurrent.futures.Future(), concurrent.futures.Future()

        def marker() -> None:
            racecheck.point("look", on=watched)

        def setter() -> None:
            (watched if same else other).set_result(1)

        _two_threads(marker, setter)

    assert _classes(lambda: program(True)) > 1
    assert _classes(lambda: program(False)) == 1
