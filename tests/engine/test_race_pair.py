"""The racing pair: after shrinking, the two conflicting operations whose order decides the failure.

Each reported pair is checked independently of how it was found: the swapped schedule's token is replayed through
the public ``replay`` and must pass, while the shrunk one fails. Unit tests pin that the pair is read from the accesses
each step recorded, never from its text.
"""

import racecheck
from classic_bugs import BUGS, check_then_act, lock_order_deadlock
from racecheck.runtime import access as acc
from racecheck.runtime.trace import TraceEvent
from racecheck.search.dependency import steps
from racecheck.search.race import candidates, conflicting
from racecheck.search.race_order import isolating_order

ROOT = "/d"


def _event(step, tid, op, access, switch=""):
    return TraceEvent(step, tid, op, "", switch, access)


def test_two_reads_never_conflict_and_one_thread_never_races_itself():
    stat_a = _event(1, 0, "fs.stat /d/a", acc.file_access(acc.READ, "/d/a", root=ROOT))
    stat_b = _event(2, 1, "fs.stat /d/a", acc.file_access(acc.READ, "/d/a", root=ROOT))
    remove = _event(3, 1, "fs.remove /d/a", acc.file_access(acc.REMOVE, "/d/a", True, ROOT))
    assert conflicting(stat_a, stat_b) == frozenset()
    assert conflicting(stat_a, remove) == {acc.file_obj("/d/a")}
    assert conflicting(_event(1, 1, "fs.stat /d/a", stat_a.access), remove) == frozenset()


def test_the_pair_is_read_from_accesses_not_from_the_text():
    """Two steps whose texts name one lock but whose accesses name different objects do not race; a note's
    accesses count for the step its thread is running."""
    events = [_event(1, 1, "acquire Lock#1", acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.ACQUIRE)),
              _event(2, 2, "acquire Lock#1", acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#9"), acc.ACQUIRE))]
    assert candidates(events) == []
    events = [_event(1, 1, "put Queue#1", acc.on(acc.Obj(acc.ObjKind.FIFO_QUEUE, "Queue#1"), acc.PUT)),
              _event(1, 1, "release Lock#1", acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.RELEASE), "info"),
              _event(2, 2, "acquire Lock#1", acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.ACQUIRE))]
    assert candidates(events) == [(0, 1, "Lock#1")]


def test_a_file_pair_names_the_file_not_the_directories_above_it():
    rename = acc.file_access(acc.RENAME, "/d/x/a.tmp", True, ROOT) + acc.file_access(acc.RENAME, "/d/x/a", True, ROOT)
    events = [_event(1, 1, "fs.rename /d/x/a.tmp -> /d/x/a", rename),
              _event(2, 2, "fs.stat /d/x/a", acc.file_access(acc.READ, "/d/x/a", root=ROOT) + acc.listing("/d/x/a"))]
    assert candidates(events) == [(0, 1, "/d/x/a")]


def test_the_isolating_order_moves_the_first_threads_steps_after_the_second():
    lock = acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.ACQUIRE)
    events = [_event(s, t, op, access) for s, (t, op, access) in enumerate(
        [(0, "begin", acc.on_thread(0, acc.BEGIN)), (0, "acquire Lock#1", lock),
         (1, "begin", acc.on_thread(1, acc.BEGIN)), (0, "point x", acc.MEMORY), (1, "acquire Lock#1", lock)], start=1)]
    assert candidates(events)[0] == (1, 4, "Lock#1")
    assert isolating_order(steps(events), 1, 4) == [0, 2, 4, 1, 3]


def _explore(fn, **kw):
    kw.setdefault("strategy", "pct")
    kw.setdefault("schedules", 500)
    return racecheck.explore(fn, seed=0, **kw)


def test_check_then_act_names_the_two_queue_operations():
    failure = _explore(check_then_act).failure
    race = failure.race
    assert race is not None, str(failure)
    assert race.resource.startswith("Queue#")
    assert race.first.tid != race.second.tid
    assert "Queue#" in race.first.op and "Queue#" in race.second.op
    assert race.swapped_outcome == "passes"
    text = str(failure)
    assert text.splitlines()[0] == str(race)
    assert f"T{race.first.tid} {race.first.op} @" in text.splitlines()[0]


def test_lock_order_deadlock_names_two_acquires():
    failure = _explore(lock_order_deadlock).failure
    assert failure.kind == "deadlock"
    race = failure.race
    assert race is not None
    assert race.first.op.startswith("acquire ") and race.second.op.startswith("acquire ")
    assert race.first.op == race.second.op  # the same lock, taken in the other order by the two threads


def test_every_classic_bug_pair_is_a_real_ordering():
    """For every classic bug the named pair, when there is one, is two threads on one resource, first before
    second in the shrunk trace; and the swapped run it was tested with really did something else."""
    named = 0
    for name, (buggy, _fixed, _needed) in sorted(BUGS.items()):
        failure = _explore(buggy).failure
        assert failure is not None, name
        race = failure.race
        if race is None:
            continue
        named += 1
        assert race.first.tid != race.second.tid, name
        assert race.first.step < race.second.step, name
        assert race.resource == "shared memory" or race.resource in race.first.op and race.resource in race.second.op, \
            name
        assert race.swapped_outcome != "", name
        lines = [e for e in failure.events if e.switch != "info"]
        assert any(e.step == race.first.step and e.op == race.first.op for e in lines), name
        if race.second.waiting:  # a deadlock: the other side never ran, its thread was blocked in it at the end
            assert failure.kind == "deadlock" and f"T{race.second.tid} waits: {race.second.op}" in failure.message
        else:
            assert any(e.step == race.second.step and e.op == race.second.op for e in lines), name
    assert named >= 4


def test_race_budget_zero_skips_the_search():
    failure = _explore(check_then_act, race_budget=0).failure
    assert failure is not None and failure.race is None
    assert not str(failure).startswith("racing pair")


def test_replayed_failure_keeps_the_same_trace_as_explore():
    failure = _explore(check_then_act).failure
    again = racecheck.replay(check_then_act, failure.token)
    assert again.failure.trace == failure.trace


def test_swapped_schedule_replays_from_its_token_and_passes():
    failure = _explore(check_then_act).failure
    swapped = racecheck.replay(check_then_act, failure.race.swapped_token)
    assert swapped.ok, swapped.trace


def test_race_and_failures_are_deterministic():
    """Same exploration, same failures, same racing pairs and swapped tokens: nothing depends on timing or ids."""
    runs = [racecheck.explore(BUGS[name][0], strategy="random", schedules=60, seed=4, max_failures=3)
            for name in ("missed_wakeup", "missed_wakeup")]
    first, second = ([(f.token, f.race, f.occurrences) for f in r.failures] for r in runs)
    assert first == second and first
