"""Line-level preemption (``preempt="lines"``): plain-Python data races found without ``racecheck.point()``.

Without it, ``self.n += 1`` runs atomically between scheduling points and exhaustive search proves the racy
counter "correct"; with it, the lost update is found, shrunk to one preemption, replayed from its token, and the
racing pair names the two stores. The locked counter passes the same exhaustive search.
"""

import re
import sys
import threading

import pytest
import racecheck
from racecheck.control import lines


class Counter:
    def __init__(self):
        self.n = 0

    def increment(self):
        self.n += 1


def racy_counter():
    counter = Counter()
    threads = [threading.Thread(target=counter.increment) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.n == 2, f"lost update: n is {counter.n}"


class LockedCounter:
    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def increment(self):
        with self.lock:
            self.n += 1


def locked_counter():
    counter = LockedCounter()
    threads = [threading.Thread(target=counter.increment) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.n == 2


def check_then_act_dict():
    cache = {}
    created = []

    def get_or_create(key):
        if key not in cache:
            created.append(key)
            cache[key] = object()
        return cache[key]

    threads = [threading.Thread(target=get_or_create, args=("k",)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(created) == 1, f"created {len(created)} times"


def test_without_line_points_or_memory_watching_the_race_is_invisible():
    result = racecheck.explore(racy_counter, strategy="dfs", preemption_bound=None, schedules=10_000, memory=False)
    assert result.ok and result.exhausted


def test_memory_watching_finds_it_without_line_points():
    result = racecheck.explore(racy_counter, strategy="dfs", preemption_bound=None, schedules=10_000)
    assert not result.ok and "lost update: n is 1" in result.failure.message
    assert "write " in result.failure.trace and ".n" in result.failure.trace


@pytest.mark.parametrize("strategy", ["dfs", "random", "pct", "pos"])
def test_lost_update_found_with_line_points(strategy):
    # memory=False: line points alone, with their store points ("store attr n"), are the subject
    result = racecheck.explore(racy_counter, strategy=strategy, schedules=2000, seed=0, preempt="lines", memory=False)
    assert not result.ok, f"{strategy} missed the lost update"
    failure = result.failure
    assert "lost update: n is 1" in failure.message
    assert failure.preemptions == 1
    assert "store attr n" in failure.trace
    again = racecheck.replay(racy_counter, failure.token, preempt="lines")
    assert again.failure.trace == failure.trace


def test_racing_pair_of_the_lost_update_is_named():
    failure = racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").failure
    race = failure.race
    assert race is not None
    assert race.first.tid != race.second.tid
    assert "test_lines.py" in race.first.loc and "test_lines.py" in race.second.loc


def test_check_then_act_on_a_dict_found():
    result = racecheck.explore(check_then_act_dict, strategy="pct", schedules=2000, seed=0, preempt="lines")
    assert not result.ok and "created 2 times" in result.failure.message


def test_locked_counter_passes_exhaustively():
    result = racecheck.explore(locked_counter, strategy="dfs", preemption_bound=2, schedules=20_000, preempt="lines")
    assert result.ok and result.exhausted


def test_token_records_line_points():
    failure = racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").failure
    with pytest.raises(racecheck.TokenError, match="configuration"):
        racecheck.replay(racy_counter, failure.token)


def test_tracing_is_removed_afterwards():
    racecheck.explore(locked_counter, strategy="random", schedules=3, preempt="lines")
    assert threading.gettrace() is None


def test_per_module_preemption_and_bad_values():
    import sys

    here = sys.modules[__name__]
    assert not racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt=[here]).ok
    with pytest.raises(ValueError, match="preempt"):
        racecheck.explore(racy_counter, preempt="words")


def spin_until_set():
    box = [False]

    def setter():
        box[0] = True

    t = threading.Thread(target=setter)
    t.start()
    while not box[0]: pass  # noqa: E701 - a one-line loop: its backward jump is the only line point
    t.join()


def _summary(fn, **kwargs):
    result = racecheck.explore(fn, preempt="lines", **kwargs)
    failure = result.failure
    if failure is None:
        return (result.ok, result.schedules, result.exhausted)
    text = [re.sub(r"0x[0-9a-f]+", "0x?", t) for t in (failure.message, failure.trace)]  # pytest shows addresses
    return (result.ok, result.schedules, failure.kind, *text, failure.token)


def _settrace_sees_stores() -> bool:
    """Whether ``f_trace_opcodes`` works under ``threading.settrace`` here (it does not on 3.12: no opcode events,
    so the settrace backend would miss store points there; the monitoring backend is what 3.12 uses)."""
    seen = []

    def local(frame, event, arg):
        seen.append(event)
        return local

    def first(frame, event, arg):
        if frame.f_code is Counter.increment.__code__:
            frame.f_trace = local
            frame.f_trace_opcodes = True
            return local
        return None

    threading.settrace(first)
    try:
        t = threading.Thread(target=Counter().increment)
        t.start()
        t.join()
    finally:
        threading.settrace(None)
    return "opcode" in seen


DIFFERENTIAL = [
    (racy_counter, {"strategy": "dfs", "schedules": 2000}),
    (racy_counter, {"strategy": "random", "schedules": 200, "seed": 3}),
    (check_then_act_dict, {"strategy": "pct", "schedules": 2000, "seed": 0}),
    (locked_counter, {"strategy": "dfs", "preemption_bound": 2, "schedules": 20_000}),
    (spin_until_set, {"strategy": "random", "schedules": 30, "seed": 1, "max_steps": 300}),
]


@pytest.mark.skipif(not lines.uses_monitoring(), reason="sys.monitoring needs Python 3.12+")
@pytest.mark.parametrize(("fn", "kwargs"), DIFFERENTIAL, ids=lambda p: getattr(p, "__name__", "-"))
def test_monitoring_and_settrace_make_the_same_points(fn, kwargs, monkeypatch):
    """Differential: on 3.12+ the sys.monitoring backend and the sys.settrace one (what 3.10/3.11 use) explore
    the same schedules, with byte-identical traces and tokens."""
    if fn is racy_counter and not _settrace_sees_stores():
        pytest.skip("sys.settrace gives no opcode events on this version, so it is no reference for store points")
    with_monitoring = _summary(fn, **kwargs)
    monkeypatch.setattr(racecheck.control.lines, "uses_monitoring", lambda: False)
    assert _summary(fn, **kwargs) == with_monitoring


@pytest.mark.skipif(not lines.uses_monitoring(), reason="sys.monitoring needs Python 3.12+")
def test_monitoring_tool_id_released_pass_or_fail():
    free_before = [tool for tool in range(6) if sys.monitoring.get_tool(tool) is None]
    racecheck.explore(locked_counter, strategy="random", schedules=3, preempt="lines")
    assert not racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").ok
    assert [tool for tool in range(6) if sys.monitoring.get_tool(tool) is None] == free_before
    assert threading.gettrace() is None and sys.gettrace() is None


@pytest.mark.skipif(not lines.uses_monitoring(), reason="sys.monitoring needs Python 3.12+")
def test_monitoring_leaves_other_tools_alone():
    """A tool already registered (a coverage tool, a debugger) keeps its id; racecheck takes another one."""
    taken = [tool for tool in (3, 4) if sys.monitoring.get_tool(tool) is None]
    for tool in taken:
        sys.monitoring.use_tool_id(tool, "someone else")
    try:
        assert not racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").ok
        assert all(sys.monitoring.get_tool(tool) == "someone else" for tool in taken)
    finally:
        for tool in taken:
            sys.monitoring.free_tool_id(tool)


def test_one_line_loop_is_a_line_point():
    """``while not box[0]: pass`` makes points (it spins until the step limit under a scheduler that never
    preempts it, instead of blocking the run uncontrolled), and a schedule that lets the setter run passes."""
    result = racecheck.explore(spin_until_set, strategy="dfs", schedules=1, max_steps=300, preempt="lines")
    assert result.failure.kind == "step-limit"
    assert result.failure.trace.count(" line ") > 100


def test_a_spin_loop_is_unwound_in_every_run_of_its_schedule_and_leaves_no_thread():
    """The failing schedule is run again (with source locations) on the same carrier. CPython drops a thread's
    trace function when it raises, as the line tracer's unwinding does in the first run: the second run's root then
    spun without line points, was reported stuck after the watchdog and left spinning for good, slowing every
    later run in the process. Now the carrier gets the trace function back for every schedule."""
    from engine_threads import racecheck_threads

    result = racecheck.explore(spin_until_set, strategy="dfs", schedules=1, max_steps=300, preempt="lines")
    assert result.failure.kind == "step-limit"
    assert result.failure.trace.count(" line ") > 100
    assert result.leaked_threads == []
    assert racecheck_threads() == []


def test_a_thread_back_in_a_stopped_run_is_unwound_at_its_next_line_point():
    """The supervisor stops a run whose thread is blocked where racecheck cannot see; when that thread comes back
    and runs code whose only points are lines, it is unwound at the first one instead of spinning on for good."""
    from engine_threads import racecheck_threads

    gate = threading.Lock()  # a real lock made outside any run
    gate.acquire()
    box = [False]

    def blocked_then_spinning():
        gate.acquire()
        while not box[0]: pass  # noqa: E701 - a one-line loop: its backward jump is the only line point

    try:
        # memory=False: one run only (memory watching's warm-up run would block on the real gate too, and stay)
        result = racecheck.explore(blocked_then_spinning, strategy="dfs", schedules=1, preempt="lines",
                                   watchdog=0.5, shrink_budget=0, race_budget=0, memory=False)
        assert result.failure.kind == "uncontrolled-blocking"
    finally:
        gate.release()
    for t in racecheck_threads():
        t.join(timeout=5)
    assert racecheck_threads() == []
