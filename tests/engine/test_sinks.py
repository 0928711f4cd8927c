"""The sink protocol (``racecheck.runtime.sinks``): a sink handed to a run sees ``begin``, then every step of the run
exactly once, in the order the steps ran, each already final, then ``end``; the steps it is fed are the ones the
runtime hands every consumer (``RunEnd.taken``), built once.
"""

from __future__ import annotations

import random
import threading

import pytest
import racecheck
from racecheck.config import resolve
from racecheck.runtime.sinks import Sink, StepLog, build
from racecheck.search.random_walk import RandomChooser
from racecheck.search.session import Session
from sink_recorders import EndOnly, EventReader, Recorder


def notes_and_memory():
    """Two threads with an RLock (its release is a note), a condition's notify (a note), and plain memory (accesses
    that join running steps)."""
    state = {"n": 0, "ready": False}
    lock = threading.RLock()
    cond = threading.Condition()

    def worker():
        with lock:
            state["n"] += 1
        with cond:
            state["ready"] = True
            cond.notify_all()

    t = threading.Thread(target=worker)
    t.start()
    with lock:
        state["n"] += 1
    with cond:
        cond.wait_for(lambda: state["ready"])
    t.join()


def fails_while_another_holds_a_lock():
    """A run stopped by an exception while another thread holds an RLock: that thread unwinds after the stop, and
    its release is a note of a thread that runs no step."""
    lock = threading.RLock()
    started = threading.Event()

    def holder():
        with lock:
            started.set()
            racecheck.point("inside")
            racecheck.point("still inside")

    t = threading.Thread(target=holder)
    t.start()
    started.wait()
    raise AssertionError("boom")


def _runs(fn, sink_type, seeds):
    session = Session(fn, resolve(None, {}, "explore").parts())
    sinks: list[Sink] = []

    def make():
        sinks.append(sink_type())
        return sinks[-1]

    session.sink_factories.append(make)
    runs = []
    with session.controlled():
        session.warm_up()
        for seed in seeds:
            runs.append(session.run_once(RandomChooser(random.Random(seed))))
    return runs, sinks


@pytest.mark.parametrize("fn", [notes_and_memory, fails_while_another_holds_a_lock])
def test_a_sink_sees_every_step_of_a_run_once_in_order_between_begin_and_end(fn):
    runs, sinks = _runs(fn, Recorder, range(6))
    assert len(sinks) == len(runs) + 1  # the warm-up run has its own
    for run, sink in zip(runs, sinks[1:], strict=True):
        kinds = [kind for kind, _ in sink.calls]
        assert kinds[0] == "begin" and kinds[-1] == "end"
        assert kinds.count("begin") == kinds.count("end") == 1
        fed = [payload for kind, payload in sink.calls if kind == "step"]
        run_end = sink.calls[-1][1]
        # each step fed once and final when fed: exactly the steps the runtime hands at the end, in the order they
        # ran (their events in trace order)
        assert fed == list(run_end.taken) == build(run.trace)
        assert len(fed) > 3
        positions = [next(i for i, event in enumerate(run.trace) if event is step.event) for step in fed]
        assert positions == sorted(set(positions))
        # every step event of the trace is a step, numbered per thread from 0
        assert len(fed) == sum(event.switch != "info" for event in run.trace)
        for tid in {step.tid for step in fed}:
            assert [step.nth for step in fed if step.tid == tid] == list(range(sum(s.tid == tid for s in fed)))


def test_steps_are_fed_as_the_run_goes_not_after_it():
    runs, sinks = _runs(notes_and_memory, Recorder, [3])
    run, sink = runs[0], sinks[-1]
    # a step comes at the run's next decision, while the trace is still growing: all but the last few are fed
    # long before the end
    assert len(sink.seen) == len(run.taken) and sink.seen == sorted(sink.seen)
    assert sink.seen[0] < len(run.trace) // 2


def test_a_sink_that_only_listens_at_the_end_costs_no_step_during_the_run():
    # the data-race sink, which reads the run's events as they become final (it finds races online), builds no step
    runs, sinks = _runs(notes_and_memory, EndOnly, [1, 2])
    for run, sink in zip(runs, sinks[1:], strict=True):
        assert run.taken.steppers == () and run.taken.made == []
        (run_end,) = sink.ends
        assert list(run_end.taken) == build(run.trace)


@pytest.mark.parametrize("fn", [notes_and_memory, fails_while_another_holds_a_lock])
def test_a_sink_that_reads_events_is_shown_only_final_events_as_the_run_goes_and_builds_no_step(fn):
    runs, sinks = _runs(fn, EventReader, range(4))
    for run, sink in zip(runs, sinks[1:], strict=True):
        assert run.taken.steppers == () and sink in run.taken.readers
        final = tuple(run.trace)
        # each time, every event shown is the run's final event at that place, and more of them each time
        assert len(sink.shown) > 3 and [len(shown) for shown in sink.shown] == sorted(len(s) for s in sink.shown)
        for shown in sink.shown:
            assert shown == final[:len(shown)]
        assert sink.shown[0] and len(sink.shown[0]) < len(final) // 2  # not only at the end
        assert sink.shown[-1] == final and len(sink.ends) == 1


def test_a_note_of_a_thread_that_runs_no_step_joins_no_step_of_the_run():
    runs, _sinks = _runs(fails_while_another_holds_a_lock, EndOnly, range(4))
    strays = 0
    for run in runs:
        assert run.failure is not None
        steps = build(run.trace)
        with_strays = build(run.trace, strays=True)
        assert [s.event for s in steps] == [s.event for s in with_strays]
        strays += steps != with_strays
    assert strays  # the holder's release, made unwinding after the failure, exists and joins no step


@pytest.mark.parametrize("fn", [notes_and_memory, fails_while_another_holds_a_lock])
def test_the_steps_since_a_point_are_the_runs_steps_from_there_built_or_not(fn):
    # dpor reads the steps after the prefix it replayed (``StepLog.since``): they must be the run's own steps from
    # there, numbered as in the whole run, whether the log had built its steps or builds only those
    runs, _sinks = _runs(fn, EndOnly, range(4))
    for run in runs:
        whole = build(run.trace)
        numbers = [step.event.step for step in whole]
        assert numbers == sorted(set(numbers))  # what ``since`` finds a step by: increasing along the steps
        starts = [k for k, event in enumerate(run.trace) if event.switch != "info"] + [len(run.trace)]
        at = {id(event): k for k, event in enumerate(run.trace)}
        for start in starts:
            expected = [step for step in whole if at[id(step.event)] >= start]
            fresh = StepLog(run.trace).finish(run.trace)
            assert fresh.since(start) == expected
            assert start == 0 or fresh.made == []  # nothing before ``start`` built for it, nor kept
            assert run.taken.since(start) == expected  # the run's own log, built whole once read
