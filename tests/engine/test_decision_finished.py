"""What a decision hands its chooser of the run so far (``Decision.finished``, ``RunView.finished`` at a value
decision): the steps finished since the run's last decision, as a range of trace indices; read, they are the run's
own steps (``RunEnd.taken``), numbered as the run numbers them, each whole (its notes joined), and the ranges of a
run's decisions follow one another from its first event, so a chooser that reads them all reads every finished step
once. A value decision leaves out the step that makes it: it is still running.
"""

from __future__ import annotations

import threading

import pytest
import racecheck
from decision_recorders import FinishedRecorder
from racecheck import runtime
from racecheck.config import resolve
from racecheck.search.session import Session


def notes_values_and_memory():
    """Two threads with an RLock (its release is a note), a value decision made inside a step that then takes a
    note (a release), and plain memory (accesses that join running steps)."""
    state = {"n": 0}
    lock = threading.RLock()

    def worker():
        with lock:
            state["n"] += runtime.current_run().choose(2, "coin")
        racecheck.point("after")
        with lock:
            state["n"] += 1

    t = threading.Thread(target=worker)
    t.start()
    with lock:
        state["n"] += runtime.current_run().choose(3, "die")
    racecheck.point("main")
    t.join()


def _row(step):
    return step.event.tid, step.event.step, step.event.op, step.nth, step.accesses


def _played(every: int, seeds):
    session = Session(notes_values_and_memory, resolve(None, {}, "explore").parts())
    played = []
    with session.controlled():
        session.warm_up()
        for seed in seeds:
            chooser = FinishedRecorder(seed, every)
            run, used = session.played(chooser)
            played.append((run, used))
    return played


@pytest.mark.parametrize("every", [1, 3])
def test_each_decision_hands_the_steps_finished_since_the_last_one(every):
    kinds = set()
    for run, chooser in _played(every, range(8)):
        assert chooser.seen, "the program makes decisions"
        taken = [_row(step) for step in run.taken]
        at = 0  # where the next range starts: they follow one another from the run's first event
        read: list = []  # the steps read, where the chooser read every range so far
        for kind, finished, steps in chooser.seen:
            kinds.add(kind)
            assert finished.start == at and finished.stop >= at
            at = finished.stop
            assert at == len(run.trace) or run.trace[at].switch != "info"  # a range ends where a step begins
            if steps is not None:
                # the run's own steps, numbered as in the whole run: the ones whose events lie in the range
                events = {id(event) for event in run.trace[finished.start:finished.stop] if event.switch != "info"}
                assert [_row(s) for s in steps] == [_row(s) for s in run.taken if id(s.event) in events]
            if read is not None:
                read = None if steps is None else read + [_row(s) for s in steps]
        if read is not None:
            assert read == taken[:len(read)] and len(read) > 3  # every step up to the last decision, once
    assert kinds == {"thread", "value"}


def test_a_value_decision_leaves_out_the_step_that_makes_it():
    for run, chooser in _played(1, range(8)):
        for kind, finished, steps in chooser.seen:
            if kind != "value":
                continue
            # the step that chose is the next range's first: its event starts where this range stops
            chooser_event = run.trace[finished.stop]
            assert chooser_event.switch != "info"
            later = [e for e in run.trace[finished.stop:] if e.op.startswith("choose ")]
            assert later and later[0].tid == chooser_event.tid
            assert all(step.event is not chooser_event for step in steps)
