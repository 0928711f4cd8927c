"""Every schedule's test function runs on a carrier thread the exploration reuses (a fresh OS thread per schedule
was over half of a schedule's fixed cost); a carrier stuck in uncontrolled code is abandoned for a fresh one, and
none outlives the exploration."""

from __future__ import annotations

import functools
import threading

import racecheck
from engine_threads import REAL
from engine_threads import racecheck_threads as _racecheck_threads
from racecheck.control.threads import LOGICAL_IDENT_BASE

# The subject here is the carrier thread, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)


def test_schedules_share_one_carrier_that_looks_like_a_fresh_root_thread():
    seen = []

    def fn():
        seen.append((REAL["ident"](), threading.current_thread().name, threading.get_ident()))

    result = _explore(fn, strategy="random", schedules=5, skip_duplicates=False)
    assert result.ok and result.schedules == 5
    assert len({os_ident for os_ident, _, _ in seen}) == 1  # one OS thread served every schedule
    assert {(name, ident) for _, name, ident in seen} == {("racecheck-T0", LOGICAL_IDENT_BASE)}
    assert _racecheck_threads() == []


def test_a_stuck_carrier_is_replaced_and_the_next_exploration_starts_clean():
    gate = threading.Lock()  # a real lock made outside any run: racecheck cannot see it
    gate.acquire()
    calls = []

    def stuck_once():
        calls.append(REAL["ident"]())
        if len(calls) == 1:
            gate.acquire()  # uncontrolled blocking: the carrier never comes back

    try:
        first = _explore(stuck_once, strategy="random", schedules=1, watchdog=0.5)
        assert first.failure is not None and first.failure.kind == "uncontrolled-blocking"
        second = _explore(stuck_once, strategy="random", schedules=3, skip_duplicates=False)
        assert second.ok and second.schedules == 3
        assert calls[0] not in calls[1:]  # the stuck carrier was not handed another schedule
    finally:
        gate.release()
    for t in _racecheck_threads():
        t.join(timeout=5)
    assert _racecheck_threads() == []
