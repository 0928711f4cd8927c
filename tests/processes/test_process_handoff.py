"""Making a ``multiprocessing`` process object is no hand-off of its arguments: like ``threading.Thread``, it keeps
references to its target and arguments (a forked child gets a copy at ``start()``, a spawned one a pickle), so the
coverage line names nothing as handed to code racecheck cannot see into (it listed ``ForkProcess x2`` for every
program that started a child, hiding a real escape among them)."""

from __future__ import annotations

import multiprocessing

import pytest
import racecheck

CONTEXTS = [method for method in ("fork", "spawn") if method in multiprocessing.get_all_start_methods()]


def _child(box):
    box.append(1)


@pytest.mark.parametrize("method", CONTEXTS)
def test_starting_a_child_hands_nothing_over(method):
    context = multiprocessing.get_context(method)

    def program():
        child = context.Process(target=_child, args=([],))
        child.start()
        child.join()
        assert child.exitcode == 0, child.exitcode

    result = racecheck.explore(program, strategy="random", schedules=1)
    assert result.ok, result.failure
    assert not [line for line in result.coverage.escaped if "Process" in line], result.coverage.escaped
