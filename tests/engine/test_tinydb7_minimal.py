"""Shrinking without running a schedule twice (``shrink.minimal``, ``shrink.Exhaustive``) and the shortlex tie-break
(``shrink.simpler``), over simulated programs: no threads.

Each property here fails under a planted regression: the exhaustive pass forgetting what a lower bound ran (it runs
schedules again), the greedy descent ignoring the exhaustive pass's schedules (it probes the schedule without
preemptions twice), the tie-break dropped (a choice that is no preemption stays in the result), and the combined
pass losing the global minimum of preemptions.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.runtime.chooser import Decision
from racecheck.search.shrink import Probe, fewest_preemptions, minimal, normalize, shrink
from shrink_cases import program_and_bug, run_threads


class Replay:
    """Recorded choices, then 0 (keep the current thread)."""

    def __init__(self, choices: list[int]) -> None:
        self.choices, self.position = list(choices), 0

    def pick_thread(self, decision: Decision) -> int:
        value = self.choices[self.position] if self.position < len(self.choices) else 0
        self.position += 1
        return value if value < len(decision.enabled) else 0


def every_schedule(lengths: tuple[int, ...]) -> list[tuple[tuple[int, ...], list[tuple[int, int]], int]]:
    """(normalized choices, events, preemptions) of every schedule the program admits."""
    out = []

    def walk(prefix: list[int]) -> None:
        arities: list[int] = []

        class Recording(Replay):
            def pick_thread(self, decision):
                arities.append(len(decision.enabled))
                return super().pick_thread(decision)

        events, choices, preemptions = run_threads(lengths, Recording(prefix))
        out.append((tuple(normalize(choices)), events, preemptions))
        for position in range(len(prefix), len(choices)):
            for alternative in range(1, arities[position]):
                walk(choices[:position] + [alternative])

    walk([])
    return out


def ordered(events, constraints) -> bool:
    where = {event: i for i, event in enumerate(events)}
    return all(where[a] < where[b] for a, b in constraints)


class Program:
    """A simulated program whose bug is an order of steps; records every run by who made it and its choices."""

    def __init__(self, lengths: tuple[int, ...], constraints) -> None:
        self.lengths, self.constraints = lengths, constraints
        self.runs: list[tuple[str, tuple[int, ...]]] = []

    def _judge(self, chooser, who: str) -> Probe | None:
        events, choices, preemptions = run_threads(self.lengths, chooser)
        if who == "exhaustive":
            self.runs.append((who, tuple(normalize(choices))))
        if self.constraints is not None and ordered(events, self.constraints):
            return Probe(normalize(choices), (preemptions, len(events)), payload=events)
        return None

    def execute(self, chooser) -> Probe | None:
        return self._judge(chooser, "exhaustive")

    def probe(self, choices: list[int]) -> Probe | None:
        self.runs.append(("greedy", tuple(normalize(choices))))
        return self._judge(Replay(choices), "greedy")

    def twice(self) -> list[tuple[int, ...]]:
        """Schedules run again: a greedy candidate (the choices it was handed) tried before or run by the
        exhaustive pass, an exhaustive run made before by the pass. The pass may run what a greedy probe ran: it
        knows only what its own runs decided, not a replay's."""
        out, exhaustive, every = [], set(), set()
        for who, choices in self.runs:
            if choices in (every if who == "greedy" else exhaustive):
                out.append(choices)
            every.add(choices)
            if who == "exhaustive":
                exhaustive.add(choices)
        return out


def test_the_exhaustive_pass_runs_each_schedule_once():
    """Bound 2's tree holds every schedule of bounds 0 and 1: each is run once over the three bounds, and every
    schedule within bound 2 is run (the pass still proves what it proved)."""
    program = Program((2, 2, 2), None)
    found, spent = fewest_preemptions(program.execute, 3, budget=100_000)
    assert found is None
    within = {choices for choices, _, preemptions in every_schedule((2, 2, 2)) if preemptions <= 2}
    assert not program.twice() and len(program.runs) == spent
    assert {choices for _, choices in program.runs} == within


def test_greedy_descent_never_probes_what_the_exhaustive_pass_ran():
    """T1's second step between T0's two: the greedy descent from a 3-preemption schedule would probe the
    schedule without preemptions first, which bound 0 has run already."""
    program = Program((2, 2), [((0, 0), (1, 1)), ((1, 1), (0, 1))])
    start = program.probe([1, 1, 1])
    assert start is not None and start.key[0] == 3
    program.runs.clear()
    best, spent = minimal(start, program.probe, program.execute, budget=1_000)
    assert best.key[0] == 1 and ordered(best.payload, program.constraints)
    assert program.runs[0] == ("exhaustive", ())  # bound 0 first: no preemption at all
    assert not program.twice() and len(program.runs) == spent


def test_a_tie_goes_to_the_fewer_and_lower_choices():
    """A choice that is no preemption (here: which thread runs after T0 ends) changes no key when zeroed: the
    descent keeps the shortlex-smaller sequence, so it never has to try zeroing that choice again."""

    def key(choices: list[int]) -> tuple:
        return (sum(1 for c in choices[2:] if c), len(choices))

    def probe(choices: list[int]) -> Probe | None:
        choices = normalize(choices)
        return Probe(choices, key(choices)) if len(choices) > 4 and choices[4] else None

    start = Probe([0, 1, 0, 0, 1], key([0, 1, 0, 0, 1]))
    best, _ = shrink(start, probe, budget=100)
    assert best.choices == [0, 0, 0, 0, 1]




@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program_and_bug(), st.data())
def test_minimal_reaches_the_fewest_preemptions_running_nothing_twice(case, data):
    """From any failing schedule: the result fails, has the fewest preemptions any failing schedule has, is no
    longer than the start among those, and nothing ran twice but what ``Program.twice`` allows."""
    lengths, constraints = case
    every = every_schedule(lengths)
    failing = [(choices, events, p) for choices, events, p in every if ordered(events, constraints)]
    if not failing:
        return  # contradictory constraints (a cycle)
    choices, _events, _p = data.draw(st.sampled_from(failing))
    program = Program(lengths, constraints)
    start = program.probe(list(choices))
    assert start is not None
    program.runs.clear()
    best, spent = minimal(start, program.probe, program.execute, budget=100_000)
    assert ordered(best.payload, constraints)
    assert best.key[0] == min(p for _, _, p in failing)
    assert best.key <= start.key
    assert not program.twice() and len(program.runs) == spent
