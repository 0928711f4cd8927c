"""PCT's busy-wait rule in sampled runs (``racecheck.search.busy_wait``, ``racecheck.control.memory_sampling``).

A sampled run sees only the accesses of watched code: a thread that calls a watched getter from unwatched helpers
again and again reads one object at decision after decision, with its progress between unseen. Taken for a
busy-wait, the thread was lowered below everyone each time, and a race that needs it to stay ahead was never run:
torch DCP's two-daemon race ("ok" after 1,000 sampled pct schedules, found at 2-5 watched whole; tests/dcp), and
``samp8_programs.two_daemons`` here, its thread-only twin (hidden in 300 sampled schedules of 5 seeds of 8 before
the fix; found where watched-whole runs find it after). A read a learning run saw made again after unwatched code
is taken for a spin only at ``SPIN_ACROSS_UNWATCHED`` repeats; every other spin still at ``SPIN``."""

from __future__ import annotations

import os
import sys

import pytest
import racecheck
from racecheck.control.memory_sampling import recurring_reads
from racecheck.runtime.access import READ, WRITE, memory, on

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import samp8_programs  # noqa: E402


@pytest.mark.parametrize("seed", [0, 1, 3, 5])  # seeds whose failing schedule is not the first
def test_sampled_pct_runs_find_the_race_a_false_spin_hid(seed):
    watched = racecheck.explore(samp8_programs.two_daemons, strategy="pct", schedules=100, seed=seed,
                                sample_memory=False, shrink_budget=0, race_budget=0)
    assert watched.failure is not None, watched.summary()  # the program has the race
    sampled = racecheck.explore(samp8_programs.two_daemons, strategy="pct", schedules=100, seed=seed,
                                shrink_budget=0, race_budget=0)
    assert sampled.failure is not None, sampled.summary()
    # every schedule before the failing one was sampled (so was it: a learning run comes at 255 only)
    assert sampled.sampled == sampled.failure.schedule_index > 0, sampled.summary()
    assert sampled.failure.message == "AssertionError: 2 daemons"


def test_a_real_spin_in_a_sampled_run_is_still_one():
    """The flag the reader spins on was never read again after unwatched code: lowered at SPIN repeats, not at
    SPIN_ACROSS_UNWATCHED (1024, beyond this step limit: the run would fail as a livelock)."""
    for seed in range(3):
        result = racecheck.explore(samp8_programs.spin_handoff, strategy="pct", schedules=60, seed=seed,
                                   max_steps=1000, shrink_budget=0, race_budget=0)
        assert result.ok, result.summary()
        assert result.sampled > 0, result.summary()


def _read(name: str) -> tuple:
    return on(memory(name), READ)


def test_recurring_reads_are_those_made_again_after_cold_code_only():
    cold, hot, spin = object(), object(), object()
    mode, flag, other = _read("Registry#1.mode"), _read("Flag#1.ready"), _read("Registry#1.daemon")
    scratch = on(memory("Scratch#1.n"), WRITE)
    records = [
        (hot, 0, mode, True), (cold, 0, scratch, True), (hot, 0, mode, True),  # again after cold code: recurring
        (spin, 1, flag, True), (spin, 1, flag, True),  # again with nothing between: a spin
        (hot, 1, other, True), (cold, 0, scratch, True), (hot, 1, other, True),  # cold code of another thread
        (hot, 2, flag, True), (hot, 2, other, True), (cold, 2, scratch, True), (hot, 2, flag, True),  # watched between
    ]
    assert recurring_reads(records, frozenset({cold})) == {mode}
