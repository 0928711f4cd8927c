"""The partial-order search on a model of threads, without the engine: programs are lists of accesses per thread,
the scheduler is a loop, and every interleaving of a small program can be enumerated. On generated programs the
search must reach every class of equivalent interleavings (same order of conflicting accesses on every object)
that brute force finds, and run no more schedules than there are interleavings. A planted bug in the sleep sets or
in the dependency relation makes these checks fail (the last tests), so they can fail.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime import relation
from racecheck.runtime.access import ENTRY, LIST, READ, WRITE, Access, file_obj, memory
from racecheck.runtime.chooser import Decision
from racecheck.runtime.sinks import StepLog, StepReader
from racecheck.runtime.steps import Outcome, RunEnd
from racecheck.search import dpor

KINDS = (READ, WRITE, ENTRY, LIST)


class ModelRun:
    def __init__(self) -> None:
        self.trace: list = []
        self.steps = 0
        self.threads: list = []
        self.reader = StepReader(self.trace)

    def steps_in(self, finished: range) -> list:
        """The steps a decision hands (``RunView.steps_in``), by the runtime's reader."""
        return self.reader.steps(finished.start, finished.stop)


class Event(NamedTuple):
    """A trace event with the accesses of its step, the fields the search reads from the engine's events."""

    step: int
    tid: int
    op: str
    loc: str
    switch: str
    access: tuple


def event(step: int, tid: int, access: tuple, switch: str) -> Event:
    return Event(step, tid, f"op{step}", "", switch, access)


def execute(program: Sequence[Sequence[tuple[Access, ...]]], chooser) -> list[tuple[int, int]]:
    """Run ``program`` under ``chooser`` (a ``Chooser``: begun with the model run as its view, told of the end);
    returns the (thread, its nth step) order."""
    run = ModelRun()
    chooser.begin(run)  # the view a chooser reads: the trace so far and the step count
    left = [list(thread) for thread in program]
    done = [0] * len(program)
    current = decided = 0
    order = []
    while any(left):
        candidates = ([current] if left[current] else []) + [t for t in range(len(program))
                                                               if t != current and left[t]]
        run.steps += 1
        index = 0
        if len(candidates) > 1:  # the events since the last decision, as the runtime hands them
            finished, decided = range(decided, len(run.trace)), len(run.trace)
            index = chooser.pick_thread(Decision(candidates, bool(left[current]), False, current, run.steps, run,
                                                 finished))
        chosen = candidates[index]
        switch = "" if chosen == current else ("preempt" if left[current] else "switch")
        run.trace.append(event(run.steps, chosen, left[chosen].pop(0), switch))
        order.append((chosen, done[chosen]))
        done[chosen] += 1
        current = chosen
    # the runtime's steps, as a run hands them (built once, read from where a reader needs them)
    chooser.end(RunEnd(Outcome.PASSED, run.steps, (), tuple(run.trace), (), StepLog(run.trace).finish(run.trace)))
    return order


def class_key(program, order) -> tuple:
    """The identity of an interleaving's class: per object, the order of accesses, runs of commuting ones as sets."""
    per_object: dict = {}
    for tid, nth in order:
        for access in program[tid][nth]:
            per_object.setdefault(access.obj, []).append((access.kind, (tid, nth)))
    key = []
    for obj in sorted(per_object):
        groups: list = []
        for kind, who in per_object[obj]:
            run = relation.active().commuting_run(kind, obj.kind)
            if groups and run is not None and groups[-1][0] == run:
                groups[-1][1].add(who)
            else:
                groups.append((run, {who}))
        key.append((obj, tuple(frozenset(g) for _, g in groups)))
    return tuple(key)


def all_orders(program):
    lengths = [len(t) for t in program]
    slots = [t for t, n in enumerate(lengths) for _ in range(n)]
    seen = set()
    for perm in itertools.permutations(slots):
        if perm in seen:
            continue
        seen.add(perm)
        counts = [0] * len(program)
        order = []
        for t in perm:
            order.append((t, counts[t]))
            counts[t] += 1
        yield order


def search(program, bound=None):
    strategy = dpor.DPOR(0, preemption_bound=bound)
    keys, runs = set(), 0
    while True:
        chooser = strategy.new_execution(runs)
        if chooser is None:
            break
        order = execute(program, chooser)
        strategy.end_execution(chooser, len(order))
        keys.add(class_key(program, order))
        runs += 1
        assert runs < 10_000
    return keys, runs, strategy


accesses = st.lists(st.builds(lambda o, k: Access(memory(f"o{o}"), k), st.integers(0, 2), st.sampled_from(KINDS)),
                    min_size=0, max_size=2).map(tuple)
programs = st.lists(st.lists(accesses, min_size=1, max_size=3), min_size=2, max_size=3).filter(
    lambda p: sum(map(len, p)) <= 8)


@settings(max_examples=150, deadline=None)
@given(programs)
def test_the_search_reaches_every_class_that_brute_force_finds(program):
    expected = {class_key(program, order) for order in all_orders(program)}
    found, runs, strategy = search(program)
    assert found == expected
    assert strategy.exhausted
    assert runs <= sum(1 for _ in all_orders(program))


def test_threads_on_their_own_objects_are_one_class_in_one_schedule():
    program = [[(Access(file_obj("/a"), WRITE),), (Access(file_obj("/a"), WRITE),)],
               [(Access(file_obj("/b"), WRITE),), (Access(file_obj("/b"), WRITE),)]]
    found, runs, _ = search(program)
    assert len(found) == 1 and runs == 1


def test_two_writers_of_one_object_are_two_classes():
    program = [[(Access(memory("x"), WRITE),)], [(Access(memory("x"), WRITE),)]]
    found, runs, _ = search(program)
    assert len(found) == 2 and runs == 2


def test_the_program_that_needs_source_sets():
    """Found by the generated test: T1's step commutes with T2's second one but both conflict with T0's, so the
    class T2.0 < T1.0 < T0.0 < T2.1 is reached only if T1 (an initial of the reversal), not T0 (the thread of the
    racing step, asleep there), is tried after T2's first step."""
    program = [[(Access(memory("o2"), READ),)],
               [(Access(memory("o0"), READ), Access(memory("o2"), ENTRY))],
               [(Access(memory("o0"), WRITE),), (Access(memory("o2"), ENTRY),)]]
    expected = {class_key(program, order) for order in all_orders(program)}
    found, _, _ = search(program)
    assert found == expected


PLANTED = [[(Access(memory("o0"), WRITE),), (Access(memory("o1"), READ),)],
           [(Access(memory("o1"), WRITE),)],
           [(Access(memory("o0"), READ),), (Access(memory("o1"), WRITE),)]]


def _classes_missed(program) -> int:
    expected = {class_key(program, order) for order in all_orders(program)}
    found, _, _ = search(program)
    return len(expected - found)


def test_a_planted_bug_in_the_dependency_relation_is_caught(monkeypatch):
    assert _classes_missed(PLANTED) == 0
    # Planted: reads are taken to commute with writes, so write/read races go unseen.
    with relation.planted(relation.RELATION.with_rows(*relation.commute(READ, WRITE))):
        assert _classes_missed(PLANTED) > 0


def test_a_planted_bug_in_the_sleep_sets_is_caught(monkeypatch):
    assert _classes_missed(PLANTED) == 0
    # Planted: a thread stays asleep even after a conflicting step ran (the wake-up is skipped).
    monkeypatch.setattr(dpor, "dependent", lambda a, b: False)
    assert _classes_missed(PLANTED) > 0


@pytest.mark.parametrize("bound", [0, 1])
def test_a_preemption_bound_still_bounds(bound):
    write = (Access(memory("x"), WRITE),)
    program = [[write, write], [write, write]]
    _, runs_bounded, _ = search(program, bound)
    _, runs_free, _ = search(program)
    assert runs_bounded < runs_free
