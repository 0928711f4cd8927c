"""PCT and busy-waiting on memory (``racecheck.search.pct.SPIN``): a thread that reads the same memory at decision
after decision while nobody else runs is lowered as a yielding thread is, so a spinner that a change point left
above the thread it waits for does not spin to the step limit and get reported as a livelock no fair scheduler
makes. Before the rule, pct reported the broken spin lock of ``benchmarks/bench_real.py`` as a step-limit failure at
9 seeds of 0-11 (7-15 s each), and the correct flag hand-off below failed the same way."""

from __future__ import annotations

import threading

import pytest
import racecheck
from racecheck.runtime.access import READ, WRITE, memory, on
from racecheck.search.busy_wait import spinning

LIMIT = 3_000  # a spin to the step limit fails fast here; the programs' runs take under 100 steps


class Flags:
    def __init__(self) -> None:
        self.held = False
        self.ready = False
        self.count = 0
        self.data = 0


def _run_all(*fns) -> None:
    threads = [threading.Thread(target=fn) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def flag_handoff() -> None:
    """Correct: the reader busy-waits for the writer's flag, then reads what it published."""
    state = Flags()

    def writer() -> None:
        state.data = 42
        state.ready = True

    def reader() -> None:
        while not state.ready:
            pass
        assert state.data == 42

    _run_all(reader, writer)


def broken_spin_lock() -> None:
    """A test-and-set lock made of a plain flag: its check and set are two steps, so an update can be lost."""
    state = Flags()

    def work() -> None:
        for _ in range(2):
            while state.held:
                pass
            state.held = True
            seen = state.count
            state.count = seen + 1
            state.held = False

    _run_all(work, work)
    assert state.count == 4, state.count


@pytest.mark.parametrize("seed", range(4))
def test_a_busy_wait_is_no_livelock_under_pct(seed):
    result = racecheck.explore(flag_handoff, strategy="pct", schedules=60, seed=seed, max_steps=LIMIT)
    assert result.ok, result.summary()


def test_pct_reports_the_spin_locks_lost_update_not_a_livelock():
    kinds = []
    for seed in range(6):
        result = racecheck.explore(broken_spin_lock, strategy="pct", schedules=300, seed=seed, max_steps=LIMIT,
                                   shrink_budget=0, race_budget=0)
        kinds.append(None if result.ok else result.failure.kind)
    assert "step-limit" not in kinds, kinds
    assert kinds.count("exception") >= 4, kinds


def test_only_reading_memory_is_spinning():
    a = memory("Flags#1.held")
    assert spinning(on(a, READ))
    assert not spinning(on(a, WRITE)) and not spinning(on(a, READ) + on(a, WRITE)) and not spinning(())


def test_a_warm_up_that_busy_waits_hands_over_and_learns():
    """The warm-up run replays no choices (``Replayer(())``: past its record it keeps the current thread): the reader
    that starts first spun there to the step limit: the learning run had hung, the schedules were sampled off it and
    the flag's races were listed without their source lines."""
    result = racecheck.explore(flag_handoff, strategy="random", schedules=3, max_steps=LIMIT)
    assert result.ok, result.summary()
    assert {race.obj for race in result.data_races} >= {"Flags#1.ready"}, result.summary()
    assert all(race.first.location and race.second.location for race in result.data_races), result.summary()


def test_the_shrinkers_exhaustive_pass_hands_over_from_a_spinner():
    """Shrinking's bounded dfs (``BoundedDFS(hand_over_spins=True)``) keeps a thread on past its prefix: a spinner
    whose holder it had left spun each probe to its step cap, and the spin lock's shrink was cut short at its
    4,000-step floor after 8 probes (27 with the replays' hand-over alone)."""
    result = racecheck.explore(broken_spin_lock, strategy="pct", seed=0, schedules=300, race_budget=0)
    assert result.failure is not None and result.failure.kind == "exception", result.summary()
    assert not any("cut short" in note for note in result.failure.notes), result.failure.notes
