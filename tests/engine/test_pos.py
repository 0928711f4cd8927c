"""strategy="pos": partial order sampling finds the classic bugs, replays exactly, is deterministic per seed, and
only re-draws the priorities of operations that race with the one that ran."""

import random

import pytest
import racecheck
from classic_bugs import BUGS
from racecheck.runtime.access import ACQUIRE, READ, Obj, ObjKind, on
from racecheck.runtime.chooser import RunView
from racecheck.runtime.scheduler import Run
from racecheck.runtime.trace import TraceEvent
from racecheck.search.pos import POSChooser

NAMES = sorted(BUGS)


@pytest.mark.parametrize("name", NAMES)
def test_pos_finds_each_classic_bug_and_its_token_replays(name):
    buggy, _fixed, needed = BUGS[name]
    result = racecheck.explore(buggy, strategy="pos", schedules=500, seed=0)
    assert not result.ok, f"pos missed {name}"
    assert result.failure.preemptions == needed
    assert result.failure.token.startswith("rc1.pos.0.")
    again = racecheck.replay(buggy, result.failure.token)
    assert again.failure.trace == result.failure.trace


@pytest.mark.parametrize("name", NAMES)
def test_pos_fixed_variants_pass(name):
    _buggy, fixed, _needed = BUGS[name]
    assert racecheck.explore(fixed, strategy="pos", schedules=100, seed=0).ok


def test_same_seed_same_schedules():
    buggy = BUGS["lost_update"][0]
    one = racecheck.explore(buggy, strategy="pos", schedules=500, seed=7, shrink_budget=0)
    two = racecheck.explore(buggy, strategy="pos", schedules=500, seed=7, shrink_budget=0)
    assert one.failure.token == two.failure.token and one.schedules == two.schedules


class _Rec:
    def __init__(self, tid, access):
        self.tid, self.access, self.finished, self.launched = tid, access, False, True
        self.op, self.loc, self.points = "op", "", 0


def test_only_racing_pending_operations_are_redrawn():
    """What races is read from the accesses of the step that ran and of each pending operation, not their text."""
    lock1, lock2 = on(Obj(ObjKind.LOCK, "Lock#1"), ACQUIRE), on(Obj(ObjKind.LOCK, "Lock#2"), ACQUIRE)
    chooser = POSChooser(random.Random(0))
    run = Run.__new__(Run)
    run.trace = []
    qsize = on(Obj(ObjKind.FIFO_QUEUE, "Queue#1"), READ)
    run.threads = [_Rec(0, lock1), _Rec(1, lock1), _Rec(2, lock2), _Rec(3, qsize)]
    for rec in run.threads:
        chooser.priority[(rec.tid, 0)] = 0.5
    run.trace.append(TraceEvent(1, 0, "acquire Lock#2", "", "", lock1))
    run.trace.append(TraceEvent(1, 0, "qsize", "", "info", qsize))  # a note: part of that step
    chooser._catch_up(RunView(run))
    assert (0, 0) not in chooser.priority  # it ran: its next operation draws afresh
    assert chooser.priority[(1, 0)] != 0.5  # races with it: re-drawn
    assert chooser.priority[(2, 0)] == 0.5  # another lock (whatever the text says): untouched
    assert chooser.priority[(3, 0)] == 0.5  # two reads commute: untouched


def test_unknown_strategy_names_pos():
    with pytest.raises(ValueError, match="pos"):
        racecheck.explore(BUGS["lost_update"][0], strategy="posix")
