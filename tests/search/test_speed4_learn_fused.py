"""Shared-memory learning read from the data-race finder's shadow memory (``RunEnd.touched``) learns exactly what the
walk over every access of the trace learns (``SharedMemory.learn``): a differential test on generated traces, the
runs of an exploration learned one after the other, and the plumbing checked on a real exploration."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import racecheck
from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime.access import ENTRY, LIST, MEMORY_OBJ, READ, WRITE, file_obj, memory, on
from racecheck.runtime.trace import TraceEvent
from racecheck.search import pct
from racecheck.search.race_clocks import RaceClocks
from racecheck.search.shared_memory import SharedMemory

OBJECTS = (memory("Box#1.a"), memory("Box#1.b"), memory("dict#2['k']"), memory("dict#2"), MEMORY_OBJ,
           file_obj("/f"))
KINDS = (READ, WRITE, ENTRY, LIST)

accesses = st.lists(st.tuples(st.sampled_from(OBJECTS), st.sampled_from(KINDS)), max_size=3)
events = st.lists(st.tuples(st.integers(0, 3), st.booleans(), accesses), max_size=25)


def _trace(rows: list[tuple[int, bool, list]]) -> list[TraceEvent]:
    trace: list[TraceEvent] = []
    for index, (tid, note, touched) in enumerate(rows):
        access = tuple(one for obj, kind in touched for one in on(obj, kind))
        trace.append(TraceEvent(index, tid, "op", "", "info" if note else "", access, index))
    return trace


def _shadow(trace: list[TraceEvent]):
    clocks = RaceClocks()
    clocks.feed(trace[: len(trace) // 2])  # fed in two parts, as the sink reads a run while it goes
    memory_steps = SimpleNamespace(real_sync=(), atomic=set(), where={})
    clocks.close(SimpleNamespace(trace=trace, memory_steps=memory_steps))
    return clocks.shadow


@settings(max_examples=300, deadline=None)
@given(st.lists(events, min_size=1, max_size=4))
def test_learning_from_the_finders_shadow_is_learning_from_the_trace(runs):
    walked, read = SharedMemory(), SharedMemory()
    for rows in runs:
        trace = _trace(rows)
        walked.learn(trace)
        read.learn(trace, _shadow(trace))
        assert read.shared == walked.shared
        assert read.touched == walked.touched


def test_an_exploration_hands_its_choosers_the_finders_shadow(monkeypatch):
    told: list = []
    real_end = pct.PCTChooser.end

    def end(self, run_end):
        told.append(run_end.touched)
        real_end(self, run_end)

    monkeypatch.setattr(pct.PCTChooser, "end", end)

    box = SimpleNamespace(n=0)

    def bump() -> None:
        box.n += 1

    def program() -> None:
        threads = [threading.Thread(target=bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    racecheck.explore(program, strategy="pct", schedules=3, shrink_budget=0)
    assert told and all(touched is not None for touched in told)
    assert any(obj.kind is memory("x").kind for touched in told for obj in touched)
    told.clear()
    racecheck.explore(program, strategy="pct", schedules=3, data_races="ignore")  # no finder: walked, as before
    assert told and all(touched is None for touched in told)
