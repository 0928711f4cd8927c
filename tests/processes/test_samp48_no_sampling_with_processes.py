"""Sampled memory watching with processes of the run: sampled as without them.

History: with sampled runs, the default pct exploration of torch 2.13's process-based ``async_save`` (two
back-to-back saves on one rank: two checkpoint daemons) said "ok" after 1,000 schedules (560 s), and found it at
schedule 2-5 with every run watched whole (``tests/dcp/test_dcp.py``, ``-m slow``), so an exploration whose learning
run started a process watched every run whole from then on (``Session._finish``). The cause was not the processes:
pct took torch.distributed's watched getter, called from unwatched helpers, for a busy-wait and lowered the trainer
thread in every sampled run (``tests/search/test_samp8_sampled_spins.py``). With that fixed the stop-gap is gone:
an exploration with a child process is sampled, and finds the race its threads have."""

from __future__ import annotations

import os
import sys

import racecheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))

import samp48_programs  # noqa: E402
import sampled_programs  # noqa: E402


def test_an_exploration_with_a_child_process_is_sampled_and_finds_the_race():
    result = racecheck.explore(samp48_programs.lazy_race_beside_a_child, schedules=12, max_failures=10,
                               shrink_budget=0, race_budget=0)
    assert result.sampled > 0, result.summary()
    assert result.processes == 2
    assert result.failure is not None and result.failure.message == "AssertionError: made 2 values", result.summary()


def test_the_same_threads_without_the_child_are_sampled():
    result = racecheck.explore(sampled_programs.lazy_race, schedules=12, max_failures=10, shrink_budget=0,
                               race_budget=0)
    assert result.sampled > 0, result.summary()
