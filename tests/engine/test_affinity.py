"""Controlled threads share one CPU (under SCHED_BATCH) during an exploration, and nothing keeps either afterwards.

Read back from the kernel (``os.sched_getaffinity``), never assumed: the root and the threads it starts, the
explorer's own thread, a thread still alive when the exploration ends, a child process started under control.
"""

from __future__ import annotations

import _thread
import os
import subprocess
import sys
import threading

import pytest
import racecheck
from racecheck.runtime import affinity

pytestmark = pytest.mark.skipif(
    not affinity.supported() or len(os.sched_getaffinity(0)) < 2,
    reason="needs thread affinity (Linux) and at least two CPUs",
)


def _mask() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))  # pid 0: the calling thread, on Linux


def _policy() -> int:
    return os.sched_getscheduler(0)


policies: list[int] = []


def _masks_of_a_run(**options) -> tuple[list[frozenset[int]], frozenset[int]]:
    """Each controlled thread's mask, read by itself while it runs, across a few schedules."""
    seen: list[frozenset[int]] = []
    policies.clear()

    def worker() -> None:
        seen.append(_mask())
        policies.append(_policy())

    def fn() -> None:
        seen.append(_mask())
        policies.append(_policy())
        t = threading.Thread(target=worker)
        t.start()
        t.join()

    outside = _mask()
    result = racecheck.explore(fn, schedules=5, **options)
    assert result.ok, result.failure
    return seen, outside


def test_the_controlled_threads_of_a_schedule_share_one_cpu_and_the_explorer_keeps_its_mask():
    process = _mask()
    seen, _ = _masks_of_a_run()
    assert seen and all(len(mask) == 1 and mask <= process for mask in seen), seen
    # the root and the thread it started are on the same CPU in every schedule (pairs in order)
    assert all(seen[i] == seen[i + 1] for i in range(0, len(seen), 2)), seen
    assert _mask() == process  # the explorer's thread is never pinned
    # SCHED_BATCH: a woken controlled thread does not preempt the one that woke it (and is about to block)
    assert policies and set(policies) == {os.SCHED_BATCH}, policies
    assert _policy() == os.SCHED_OTHER


def test_one_cpu_false_leaves_every_mask_alone():
    process = _mask()
    seen, _ = _masks_of_a_run(one_cpu=False)
    assert seen and all(mask == process for mask in seen), seen
    assert set(policies) == {os.SCHED_OTHER}, policies


def test_a_thread_alive_after_the_exploration_gets_the_process_mask_back():
    """A thread started under control by something racecheck does not control (here a raw ``_thread`` thread, as a
    C library's worker pool would be) inherits the pin; the end of the exploration takes it off again."""
    process = _mask()
    release = _thread.allocate_lock()
    release.acquire()
    masks: dict[str, frozenset[int]] = {}
    ready = _thread.allocate_lock()
    ready.acquire()
    finished = _thread.allocate_lock()
    finished.acquire()
    native: list[int] = []

    def outlives() -> None:
        native.append(threading.get_native_id())
        masks["at start"] = _mask()
        masks["policy at start"] = _policy()
        ready.release()
        release.acquire()  # held until after the exploration
        masks["after"] = _mask()
        masks["policy after"] = _policy()
        finished.release()

    def fn() -> None:
        if not native:
            _thread.start_new_thread(outlives, ())
            ready.acquire()

    result = racecheck.explore(fn, schedules=1)
    assert result.ok, result.failure
    try:
        assert len(masks["at start"]) == 1 and masks["policy at start"] == os.SCHED_BATCH
        assert frozenset(os.sched_getaffinity(native[0])) == process
        assert os.sched_getscheduler(native[0]) == os.SCHED_OTHER
    finally:
        release.release()
    assert finished.acquire(timeout=10)
    assert masks["after"] == process and masks["policy after"] == os.SCHED_OTHER


def test_a_child_process_started_under_control_gets_the_process_mask():
    process = _mask()
    out: list[str] = []

    def fn() -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0))"],
            stdout=subprocess.PIPE,
            text=True,
        )
        text, _ = child.communicate()
        out.append(text.strip())
        out.append(str(sorted(_mask())))  # and the thread that started it is pinned again afterwards
        out.append(str(_policy()))

    result = racecheck.explore(fn, schedules=1)
    assert result.ok, result.failure
    assert out[0] == f"{sorted(process)} {os.SCHED_OTHER}"
    assert len(eval(out[1])) == 1  # noqa: S307 - a list of ints printed above
    assert out[2] == str(os.SCHED_BATCH)


def test_pinning_changes_no_decision():
    """Where threads run is not part of a schedule: the same failure, token and trace either way."""
    from classic_bugs import lost_update  # a classic two-thread race

    on = racecheck.explore(lost_update, seed=3, schedules=200)
    off = racecheck.explore(lost_update, seed=3, schedules=200, one_cpu=False)
    assert not on.ok and not off.ok
    assert on.failure.token == off.failure.token
    assert on.failure.trace == off.failure.trace


def test_one_cpu_must_be_a_bool():
    with pytest.raises(TypeError, match="one_cpu must be True or False"):
        racecheck.Config(one_cpu="yes")
