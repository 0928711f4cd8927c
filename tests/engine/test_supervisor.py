"""The supervisor never hangs or crashes a run: it knows progress from the scheduler's own records, reads a frame
only once a thread is already suspected stuck, and a surprise while describing it gives a plain description."""

import gc
import sys
import threading

import pytest
import racecheck


def many_thread_starts(n=100):
    done = []

    def work(i):
        done.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(done) == list(range(n))


@pytest.fixture
def eager_gc():
    """A very low GC threshold: the condition under which CPython 3.11's sys._current_frames() could deadlock
    against a Thread.start() (gh-106883) when the supervisor polled frames every 20 ms."""
    old = gc.get_threshold()
    gc.set_threshold(5, 1, 1)
    try:
        yield
    finally:
        gc.set_threshold(*old)


@pytest.fixture
def frame_reads(monkeypatch):
    calls = []
    real = sys._current_frames

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(sys, "_current_frames", counting)
    return calls


def test_hundred_thread_starts_per_schedule_with_eager_gc(eager_gc, frame_reads):
    result = racecheck.explore(many_thread_starts, strategy="random", schedules=8, seed=1)
    assert result.ok, result.failure
    assert frame_reads == []  # progress is known from the scheduler's records, frames are never polled


@pytest.mark.slow
def test_hundred_thread_starts_over_many_schedules_with_eager_gc(eager_gc):
    for seed in range(5):
        result = racecheck.explore(many_thread_starts, strategy="random", schedules=40, seed=seed)
        assert result.ok, result.failure


def _blocks_on_a_real_lock(real_lock):
    def fn():
        real_lock.acquire()

    return fn


def _stuck_report(watchdog=0.5):
    real_lock = threading.Lock()  # created outside any run: racecheck cannot see it
    real_lock.acquire()
    try:
        return racecheck.explore(_blocks_on_a_real_lock(real_lock), schedules=1, watchdog=watchdog)
    finally:
        real_lock.release()


def test_a_stuck_thread_is_located_from_its_frame():
    failure = _stuck_report().failure
    assert failure.kind == "uncontrolled-blocking"
    assert "stuck in" in str(failure.exception) and "test_supervisor.py:" in str(failure.exception)


@pytest.mark.parametrize("weird", ["code object", "raises"])
def test_a_surprise_while_describing_gives_a_plain_description(monkeypatch, weird):
    def broken():
        if weird == "raises":
            raise RuntimeError("interpreter says no")
        return {t.ident: broken.__code__ for t in threading.enumerate()}  # not frames (seen once in the wild)

    monkeypatch.setattr(sys, "_current_frames", broken)
    failure = _stuck_report().failure
    assert failure.kind == "uncontrolled-blocking"
    text = str(failure.exception)
    assert "T0 made no scheduling point for 2.5s since 'begin'" in text  # the hang bound: 5 watchdogs of 0.5 s
    assert "Traceback" not in text
