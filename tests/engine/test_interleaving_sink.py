"""The interleaving key is fed through the sink protocol (``racecheck.search.interleaving_sink``): what a run's key is
computed from is what its sink was told at the run's end (``RunEnd``: the trace, the outcome, the thread the failure
names), never fields of the ``Run`` read afterwards; a failing run's key reads only the failing thread's causal past.
"""

from __future__ import annotations

import random
import threading

import pytest
import racecheck
from racecheck.config import resolve
from racecheck.runtime.steps import Outcome, RunEnd
from racecheck.search.coverage import interleaving_key, interleaving_of
from racecheck.search.dependency import causal_past
from racecheck.search.interleaving_sink import InterleavingSink
from racecheck.search.random_walk import RandomChooser
from racecheck.search.session import Session


def stops_while_others_run():
    """One thread fails while two others still have steps to make: the other threads stop wherever they were."""
    box = {"a": 0, "b": 0}

    def bump(key):
        for _ in range(3):
            box[key] += 1
            racecheck.point("bump")

    threads = [threading.Thread(target=bump, args=(key,)) for key in ("a", "b")]
    for t in threads:
        t.start()
    racecheck.point("before the check")
    assert box["a"] == 0, "a moved"
    for t in threads:
        t.join()


def _runs(fn, seeds):
    session = Session(fn, resolve(None, {}, "explore").parts())
    with session.controlled():
        session.warm_up()
        return [session.run_once(RandomChooser(random.Random(seed))) for seed in seeds]


def _sink(run):
    (sink,) = [sink for sink in run.sinks if type(sink) is InterleavingSink]
    return sink


def test_every_run_of_a_session_reads_its_key_from_its_sink():
    runs = _runs(stops_while_others_run, range(12))
    failing = [run for run in runs if run.failure is not None]
    passing = [run for run in runs if run.failure is None]
    assert failing and passing  # both ways occur among these seeds
    shorter = 0
    for run in runs:
        sink = _sink(run)
        assert sink.trace is run.trace  # the run's own list, as RunEnd handed it
        if run.failure is None:
            assert interleaving_of(run) is run.trace
        else:
            assert run.failure.kind == "exception" and sink.failed == run.failure.tid
            cut = interleaving_of(run)
            assert cut == causal_past(run.trace, run.failure.tid)
            shorter += len(cut) < len(run.trace)
    assert shorter  # a thread's steps after the failure that do not reach it are no part of the key


def test_the_sink_reads_what_the_run_end_says_not_the_run():
    run = _runs(stops_while_others_run, range(12))
    run = next(one for one in run if one.failure is not None and
               len(causal_past(one.trace, one.failure.tid)) < len(one.trace))
    told = InterleavingSink()
    told.begin(None)
    told.end(RunEnd(Outcome.PASSED, run.steps, run.picked, run.trace, ()))
    assert told.interleaving() is run.trace  # told it passed: the whole trace, whatever the run says
    told.end(RunEnd(Outcome.EXCEPTION, run.steps, run.picked, run.trace, (), failed=run.failure.tid))
    assert interleaving_key(told.interleaving()) == interleaving_key(interleaving_of(run))
    assert interleaving_key(told.interleaving()) != interleaving_key(run.trace)
    told.begin(None)  # a sink is made per run, and a new run starts it afresh
    assert told.interleaving() == ()


def test_a_run_without_the_sink_has_no_key():
    class Bare:
        sinks = ()

    with pytest.raises(LookupError):
        interleaving_of(Bare())
