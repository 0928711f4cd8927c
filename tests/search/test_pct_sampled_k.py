"""PCT measures its k (the decisions of an execution) apart for sampled executions, which leave code unwatched and
so make far fewer decisions: the strategy learns that an execution is sampled from ``new_execution``, the one
place it is told, and nothing sets it from outside."""

from __future__ import annotations

from types import SimpleNamespace

from racecheck.runtime.chooser import Decision
from racecheck.search.pct import PCT

VIEW = SimpleNamespace(running=SimpleNamespace(access=()))  # a step that touches nothing known: every decision counts


def _decide(chooser, decisions: int) -> None:
    for step in range(decisions):
        chooser.pick_thread(Decision([0, 1], True, False, 0, step, VIEW))


def test_sampled_executions_measure_their_own_k():
    pct = PCT(0, depth=3)
    whole = pct.new_execution(0)
    _decide(whole, 7)
    pct.end_execution(whole, 7)
    first_sampled = pct.new_execution(1, sampled=True)
    assert first_sampled.sampled and not first_sampled.change_points  # no sampled execution measured yet
    _decide(first_sampled, 2)
    pct.end_execution(first_sampled, 2)
    assert (pct.max_decisions, pct.max_sampled_decisions) == (7, 2)
    sampled_points = [pct.new_execution(i, sampled=True).change_points for i in range(2, 30)]
    whole_points = [pct.new_execution(i).change_points for i in range(2, 30)]
    assert all(points <= {1, 2} for points in sampled_points)  # drawn from the sampled executions' k
    assert any(max(points) > 2 for points in whole_points)  # drawn from the whole ones'
    assert not any(pct.new_execution(i).sampled for i in range(3))
