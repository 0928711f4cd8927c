"""A failure that happens whatever the threads do is reported as not a race; one whose order matters as a race.

``Failure.depends_on_schedule`` is decided by the racing pair, by schedules the exploration already ran, or by the
fixed probe schedules of ``racecheck.search.not_a_race``; every race here is made by ``racecheck.point``.
"""

from __future__ import annotations

import threading

import racecheck
from classic_bugs import lost_update
from racecheck.runtime.chooser import Decision
from racecheck.search import not_a_race


def refused():
    """Starts a helper thread, then fails whatever the order: a configuration error, not a race."""
    worker = threading.Thread(target=lambda: racecheck.point("helper"))
    worker.start()
    worker.join()
    raise TypeError("the trainer refuses this plugin")


def test_a_failure_under_every_schedule_is_not_a_race():
    result = racecheck.explore(refused, strategy="pct", schedules=50, seed=0)
    failure = result.failure
    assert failure.depends_on_schedule is False and failure.not_a_race
    assert str(failure).startswith(not_a_race.NOT_A_RACE + "\n")
    assert f"({not_a_race.NOT_A_RACE})" in result.summary()


def test_a_race_depends_on_the_schedule_even_without_its_racing_pair():
    result = racecheck.explore(lost_update, strategy="random", schedules=200, seed=0, race_budget=1)
    assert not result.ok and result.failure.depends_on_schedule is True
    assert not_a_race.NOT_A_RACE not in str(result.failure)


def test_race_budget_zero_skips_the_check():
    result = racecheck.explore(refused, strategy="pct", schedules=5, seed=0, race_budget=0)
    assert result.failure.depends_on_schedule is None


def test_a_replay_judges_only_when_asked_and_agrees():
    result = racecheck.explore(refused, strategy="pct", schedules=5, seed=0)
    assert racecheck.replay(refused, result.failure.token).failure.depends_on_schedule is None
    judged = racecheck.replay(refused, result.failure.token, judge=True)
    assert judged.failure.depends_on_schedule is False


def test_the_probes_disagree_with_each_other():
    """Each probe orders two runnable threads its own way; the strict priorities pick opposite threads."""
    picks = {type(p).__name__: p.pick_thread(Decision([0, 1], True, False, 0, 0, None))
             for p in not_a_race.probes()[:3]}
    assert picks == {"KeepRunning": 0, "Newest": 1, "Oldest": 0}
    assert [p.pick_thread(Decision([2, 1], True, False, 2, 0, None)) for p in not_a_race.probes()[1:3]] == [0, 1]
