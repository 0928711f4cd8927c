"""The shrinker on its own: pure logic over synthetic probes, no threads.

``shrink`` must actually shrink (a planted "return the unshrunk schedule" fails here), must keep going to a local
minimum (a planted "stop after the first improvement" fails here), must only ever return schedules the probe said
fail, must respect its budget and be deterministic. ``fewest_preemptions`` (the exhaustive pass) must find the
global minimum number of preemptions, checked against brute force over every schedule of small simulated programs.
"""

from __future__ import annotations

import types

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.runtime.chooser import Decision
from racecheck.search.shrink import Probe, fewest_preemptions, normalize, shrink
from shrink_cases import program_and_bug, run_threads

# ----- synthetic probes over bare choice lists ---------------------------------------------------------------------


def _key(choices: list[int]) -> tuple:
    return (sum(1 for c in choices if c), len(choices), sum(choices))


def _pure_probe(fails, calls: list | None = None):
    """A probe whose verdict is a pure function of the candidate; key = (non-zero choices, length, sum)."""

    def probe(choices: list[int]) -> Probe | None:
        if calls is not None:
            calls.append(tuple(choices))
        if not fails(choices):
            return None
        choices = normalize(choices)
        return Probe(choices, _key(choices), payload=("run", tuple(choices)))

    return probe


def _start(choices: list[int]) -> Probe:
    return Probe(normalize(choices), _key(normalize(choices)), payload=("run", tuple(normalize(choices))))


NOISY = [3, 1, 0, 2, 2, 1, 0, 4, 1, 1, 2, 0, 3, 1, 2, 1, 0, 1, 3, 2, 1, 1, 2, 0, 1, 2, 1, 3, 1, 2]


def test_shrinks_to_the_single_choice_the_failure_needs():
    """Fails whenever choice 7 is non-zero: the minimum is seven zeros and a 1, reached from a noisy schedule
    through many successive improvements (so stopping early, or returning the start, cannot pass)."""
    assert NOISY[7]
    best, spent = shrink(_start(NOISY), _pure_probe(lambda c: len(c) > 7 and c[7] != 0), budget=10_000)
    assert best.choices == [0] * 7 + [1]
    assert best.key == (1, 8, 1)
    assert best.payload == ("run", tuple(best.choices))  # the probe's own result comes back, payload and all
    assert 0 < spent < 10_000


def test_shrinks_a_conjunction_to_exactly_its_required_choices():
    def fails(c: list[int]) -> bool:
        return len(c) > 20 and c[3] >= 2 and c[20] >= 1

    best, _ = shrink(_start(NOISY), _pure_probe(fails), budget=10_000)
    assert best.choices == [0, 0, 0, 2] + [0] * 16 + [1]


def test_keeps_the_start_when_nothing_simpler_fails():
    start = [0, 0, 1]
    best, spent = shrink(_start(start), _pure_probe(lambda c: c == [0, 0, 1]), budget=100)
    assert best.choices == start and best.payload == ("run", (0, 0, 1))
    assert spent > 0  # it tried


def test_uses_what_the_probe_reports_not_the_candidate():
    """A replay consumes only the choices the run asked for: the probe's ``choices`` are what the run used."""

    def probe(choices: list[int]) -> Probe | None:
        used = normalize(choices[:4])  # this "program" makes only 4 decisions
        if len(used) > 2 and used[2]:
            return Probe(used, _key(used), payload=tuple(used))
        return None

    best, _ = shrink(_start([1, 1, 1, 1, 5, 5, 5]), probe, budget=1_000)
    assert best.choices == [0, 0, 1]


def test_respects_the_budget_and_reports_what_it_spent():
    calls: list = []
    best, spent = shrink(_start(NOISY), _pure_probe(lambda c: len(c) > 7 and c[7] != 0, calls), budget=5)
    assert spent == len(calls) == 5
    assert best.key <= _key(NOISY)
    best, spent = shrink(_start(NOISY), _pure_probe(lambda c: True), budget=0)
    assert spent == 0 and best.choices == normalize(NOISY)


def test_is_deterministic():
    runs = []
    for _ in range(2):
        calls: list = []
        best, spent = shrink(_start(NOISY), _pure_probe(lambda c: sum(c) >= 7, calls), budget=10_000)
        runs.append((best.choices, spent, calls))
    assert runs[0] == runs[1]


def _neighbours(choices: list[int]):
    for i in range(len(choices)):
        if choices[i]:
            yield choices[:i] + [0] + choices[i + 1 :]
        yield choices[:i] + choices[i + 1 :]
        for lower in range(1, choices[i]):
            yield choices[:i] + [lower] + choices[i + 1 :]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.lists(st.integers(0, 4), min_size=1, max_size=25),
    needed=st.lists(st.tuples(st.integers(0, 24), st.integers(1, 4)), min_size=1, max_size=3),
)
def test_result_fails_is_no_worse_and_is_a_local_minimum(start, needed):
    """For "fails iff choice i >= v for each (i, v) needed": the result fails, its key never exceeds the start's,
    and no single zeroing, deletion or lowering of it fails with a smaller key (a local minimum)."""

    def fails(c: list[int]) -> bool:
        return all(len(c) > i and c[i] >= v for i, v in needed)

    for i, v in needed:  # make the start fail
        start = start + [0] * max(0, i + 1 - len(start))
        start[i] = max(start[i], v)
    probe = _pure_probe(fails)
    best, _ = shrink(_start(start), probe, budget=100_000)
    assert fails(best.choices)
    assert best.key <= _key(normalize(start))
    for candidate in _neighbours(best.choices):
        result = probe(candidate)
        assert result is None or result.key >= best.key, (best.choices, candidate)
    # here the minimum is unique: exactly the needed choices
    want: dict[int, int] = {}
    for i, v in needed:
        want[i] = max(want.get(i, 0), v)
    assert best.choices == [want.get(i, 0) for i in range(max(want) + 1)]


# ----- a tiny simulated program for the exhaustive pass --------------------------------------------------------------


class _Replay:
    def __init__(self, choices: list[int]) -> None:
        self.choices = list(choices)
        self.position = 0

    def pick_thread(self, decision):
        value = self.choices[self.position] if self.position < len(self.choices) else 0
        self.position += 1
        return value if value < len(decision.enabled) else 0


def _all_schedules(lengths: tuple[int, ...]):
    """Every choice sequence the program admits (depth-first over arities), with its run."""
    results = []

    def walk(prefix: list[int]) -> None:
        events, choices, preemptions = run_threads(lengths, _Replay(prefix))
        results.append((choices, events, preemptions))
        # branch at every decision past the prefix: find arities by re-simulating with a recording replay
        arities = _arities(lengths, choices)
        for position in range(len(prefix), len(choices)):
            for alternative in range(1, arities[position]):
                walk(choices[:position] + [alternative])

    walk([])
    return results


def _arities(lengths, choices):
    seen: list[int] = []

    class Recording(_Replay):
        def pick_thread(self, decision):
            seen.append(len(decision.enabled))
            return super().pick_thread(decision)

    run_threads(lengths, Recording(choices))
    return seen


def _ordered(events, constraints) -> bool:
    where = {event: i for i, event in enumerate(events)}
    return all(where[a] < where[b] for a, b in constraints)




@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_and_bug())
def test_exhaustive_pass_finds_the_global_minimum(case):
    lengths, constraints = case
    every = _all_schedules(lengths)
    failing = [(p, c) for c, events, p in every if _ordered(events, constraints)]
    if not failing:
        return  # contradictory constraints (a cycle): nothing to shrink
    minimum = min(p for p, _ in failing)
    worst = max(p for p, _ in failing)

    def execute(chooser) -> Probe | None:
        events, choices, preemptions = run_threads(lengths, chooser)
        if _ordered(events, constraints):
            return Probe(normalize(choices), (preemptions, len(events)), payload=events)
        return None

    found, spent = fewest_preemptions(execute, worst, budget=100_000)
    if minimum == worst:
        assert found is None  # nothing with fewer preemptions than what was found: keep it
        return
    assert found is not None
    assert found.key[0] == minimum
    assert _ordered(found.payload, constraints)
    assert spent <= len(every) * worst


def _two_by_two(constraints):
    lengths = (2, 2)

    def execute(chooser) -> Probe | None:
        events, choices, preemptions = run_threads(lengths, chooser)
        if _ordered(events, constraints):
            return Probe(normalize(choices), (preemptions, len(events)), payload=events)
        return None

    return execute, (lambda choices: execute(_Replay(choices)))


def test_greedy_tries_the_schedule_without_preemptions():
    """Choices change meaning when an earlier one changes: from [1, 1] (T1 first, then back to T0), zeroing one
    choice at a time never fails, but zeroing all of them (T0 runs through, then T1) does."""
    _, probe = _two_by_two([((0, 1), (1, 1))])
    start = probe([1, 1])
    assert start is not None and start.key[0] == 2
    best, _ = shrink(start, probe, budget=1_000)
    assert best.key[0] == 0


def test_exhaustive_pass_beats_a_greedy_local_minimum():
    """T1's second step must fall between T0's two steps. From a 3-preemption failure no single lowering,
    zeroing or deletion keeps the bug, so greedy stays at 3; a 1-preemption schedule exists and the exhaustive
    pass finds it."""
    execute, probe = _two_by_two([((0, 0), (1, 1)), ((1, 1), (0, 1))])
    start = probe([1, 1, 1])
    assert start is not None and start.key[0] == 3
    greedy, _ = shrink(start, probe, budget=1_000)
    assert greedy.key[0] == 3  # the local minimum
    found, spent = fewest_preemptions(execute, greedy.key[0], budget=1_000)
    assert found is not None and found.key[0] == 1
    assert spent < 20
    again, _ = shrink(found, probe, budget=1_000)  # explore's last pass: polish the global minimum
    assert again.key[0] == 1


def test_exhaustive_pass_respects_its_budget():
    calls = []

    def execute(chooser) -> Probe | None:
        calls.append(1)
        run_threads((3, 3, 3), chooser)
        return None

    found, spent = fewest_preemptions(execute, 3, budget=17)
    assert found is None and spent == len(calls) == 17


def test_every_chooser_a_single_run_may_rerun_makes_a_fresh_copy():
    """``Session.run_once`` runs a stale attempt again with ``chooser.fresh()`` (code came under memory watch while
    it ran): every chooser handed to it (the shrinker's dfs, replays, widening, the racing pair's swap, the
    not-a-race probes) starts over the same way, and answers the same decisions as a new one."""
    from racecheck.search.dfs import BoundedDFS
    from racecheck.search.not_a_race import probes
    from racecheck.search.race import SwapChooser
    from racecheck.search.replay import Replayer
    from racecheck.search.widening import Widening

    dfs = BoundedDFS(0, preemption_bound=1)
    first = dfs.new_execution(0)
    run_threads((2, 2), first)
    dfs.end_execution(first, 0)
    made = [dfs.new_execution(1), Replayer([1, 0, 1]), Widening([1, 0], [2, 1], frozenset()),
            SwapChooser([((1, 0, 0), "op")], [0]), *probes()]
    view = types.SimpleNamespace(cold_point=-1, steps=0, picked=[], trace=[], running=None,
                                 thread=lambda tid: None, pending=lambda: [])
    for chooser in made:
        decisions = [Decision([0, 1], True, False, 0, step, view) for step in range(3)]
        original = [chooser.pick_thread(d) for d in decisions]
        used = chooser.fresh()  # after it made its picks: the state it began in, not the one it is in
        again = [used.pick_thread(d) for d in decisions]
        assert type(used) is type(chooser) and used is not chooser and original == again, type(chooser).__name__
