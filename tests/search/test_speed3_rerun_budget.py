"""Data-race line reruns are step-budgeted like the pair's and shrinking's reruns (issue 47): within the budget an
exploration lists its races with lines; with the budget spent it lists none of those only a refused run showed, and
its summary says why."""

import threading

import racecheck
from racecheck.search import data_races


class _Shared:
    def __init__(self) -> None:
        self.value = 0


def unordered_writes() -> None:
    """Two threads write one attribute with nothing ordering them: a data race, and no failure."""
    shared = _Shared()

    def write(v: int) -> None:
        shared.value = v

    threads = [threading.Thread(target=write, args=(v,)) for v in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_races_are_listed_with_lines_within_the_budget():
    result = racecheck.explore(unordered_writes, strategy="random", schedules=20, seed=0)
    assert result.ok, result.summary()
    assert result.data_races, result.summary()
    assert result.races_note == ""


def test_a_spent_budget_refuses_the_rerun_and_says_so(monkeypatch):
    monkeypatch.setattr(data_races, "FLOOR", 0)
    monkeypatch.setattr(data_races, "FACTOR", 0)
    result = racecheck.explore(unordered_writes, strategy="random", schedules=20, seed=0)
    assert result.ok, result.summary()
    assert result.data_races == []
    assert "not run again with source lines" in result.races_note
    assert result.races_note in result.summary()
