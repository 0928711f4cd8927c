"""The engine's one-shot flag behaves like ``threading.Event`` for what the scheduler uses of it (set, is_set,
wait with and without timeout), checked against the real Event on hypothesis-generated operation sequences, and
waiters on other real threads are all released by one set."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime.latch import Latch

OPS = st.lists(st.sampled_from(["set", "is_set", "wait0", "wait_short"]), max_size=12)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(OPS)
def test_latch_matches_event_on_one_thread(ops):
    latch, event = Latch(), threading.Event()
    for op in ops:
        if op == "set":
            assert latch.set() is None and event.set() is None
        elif op == "is_set":
            assert latch.is_set() == event.is_set()
        elif op == "wait0":
            assert latch.wait(0) == event.wait(0)
        else:
            assert latch.wait(0.001) == event.wait(0.001)


def test_one_set_releases_every_waiter_and_later_waits_return_at_once():
    latch = Latch()
    started = threading.Barrier(5)
    results = []

    def waiter():
        started.wait()
        results.append(latch.wait())

    threads = [threading.Thread(target=waiter) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait()
    latch.set()
    for t in threads:
        t.join(timeout=30)
    assert results == [True] * 4 and not any(t.is_alive() for t in threads)
    assert latch.wait() and latch.wait(0) and latch.is_set()


def test_setting_twice_is_harmless():
    latch = Latch()
    latch.set()
    latch.set()
    assert latch.wait(0)
