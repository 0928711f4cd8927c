"""The racing pair is the decisive one: its swap reverses that pair and keeps every other conflicting pair in order,
so "swapped, it passes" is about that pair alone; pairs on the program's objects come before the engine's
bookkeeping.

Every pair named here is checked independently of how it was found: its swapped token replays through the public
``replay`` and passes, and a replay of the failure's token names the same pair.
"""

import pytest
import racecheck
from race_isolation_programs import lazy_init, reader_sees_x
from racecheck.config import resolve
from racecheck.runtime import access as acc
from racecheck.runtime.trace import TraceEvent
from racecheck.search.dependency import steps
from racecheck.search.race import SwapChooser, candidates
from racecheck.search.race_order import identities, isolating_order, other_reversed
from racecheck.search.session import Session

ROOT = "/d"


LOCK2 = acc.Obj(acc.ObjKind.LOCK, "Lock#2")

def _event(step, tid, op, access, switch=""):
    return TraceEvent(step, tid, op, "", switch, access)


def _trace(*rows):
    return [_event(step, tid, op, access) for step, (tid, op, access) in enumerate(rows)]


# The selection, on hand-made traces ------------------------------------------------------------------------------


def test_a_pair_whose_reversal_drags_another_conflicting_pair_along_has_no_isolating_order():
    """T0 writes a then b; T1 reads b then a. Reversing (T0 write a, T1 read a) needs T1's read of b before T0's
    write of b too: no order reverses that pair alone. (T0 write b, T1 read b) has one."""
    a, b = acc.memory("Box#1.a"), acc.memory("Box#1.b")
    events = _trace((0, "write a", acc.on(a, acc.WRITE)), (0, "write b", acc.on(b, acc.WRITE)),
                    (1, "read b", acc.on(b, acc.READ)), (1, "read a", acc.on(a, acc.READ)))
    found = steps(events)
    assert candidates(events) == [(0, 3, "Box#1.a"), (1, 2, "Box#1.b")]
    assert isolating_order(found, 0, 3) is None
    assert isolating_order(found, 1, 2) == [0, 2, 1, 3]


def test_steps_that_commute_with_the_first_stay_before_the_second():
    """A third thread's step between the pair that conflicts with neither stays where it was; one that follows the
    first step (it conflicts with it) moves after the second with it."""
    lock = acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.ACQUIRE)
    events = _trace((0, "acquire Lock#1", lock), (2, "read Box#1.c", acc.on(acc.memory("Box#1.c"), acc.READ)),
                    (2, "acquire Lock#2", acc.on(LOCK2, acc.ACQUIRE)),
                    (1, "acquire Lock#1", lock))
    assert isolating_order(steps(events), 0, 3) == [1, 2, 3, 0]
    events = _trace((0, "acquire Lock#1", lock), (2, "acquire Lock#1", lock), (1, "read Box#1.c",
                    acc.on(acc.memory("Box#1.c"), acc.READ)), (1, "acquire Lock#1", lock))
    assert isolating_order(steps(events), 0, 3) is None  # T2's acquire follows T0's and comes before T1's


def test_a_start_and_the_first_step_it_enables_are_no_pair_to_reverse():
    start = acc.on_thread(1, acc.START)
    begin = acc.on_thread(1, acc.BEGIN) + acc.on(acc.memory("Box#1.c"), acc.READ)
    events = _trace((0, "start T1", start + acc.on(acc.memory("Box#1.c"), acc.WRITE)), (1, "begin", begin))
    assert isolating_order(steps(events), 0, 1) is None


def test_a_put_and_a_get_of_an_earlier_item_of_a_fifo_queue_order_nothing():
    """An executor's shutdown puts its sentinel after a work item is queued; the worker's get of that item is the
    same in either order, so the pair after it can be reversed alone. On a LIFO queue the get would take the
    sentinel instead: there the put and the get stay ordered."""
    fifo = acc.Obj(acc.ObjKind.FIFO_QUEUE, "Executor#1.queue", engine=True)
    for queue, free in ((fifo, True), (acc.Obj(acc.ObjKind.QUEUE, "LifoQueue#1"), False)):
        put, get = acc.on(queue, acc.PUT), acc.on(queue, acc.GET)
        f = acc.file_access(acc.READ, "/d/a", root=ROOT)
        rename = acc.file_access(acc.RENAME, "/d/a", True, ROOT)
        events = _trace((0, "put", put), (0, "stat /d/a", f), (0, "put", put), (1, "get", get),
                        (1, "rename -> /d/a", rename))
        assert candidates(events)[0] == (1, 4, "/d/a")
        assert (isolating_order(steps(events), 1, 4) is not None) is free, queue


def test_making_a_directory_commutes_with_a_lookup_below_it():
    """``stat d/a`` finds nothing whether or not ``mkdir d`` came first; a listing of ``d`` itself does not."""
    mkdir = acc.file_access(acc.CREATE, "/d/x", True, ROOT)
    stat = acc.file_access(acc.READ, "/d/x/a", root=ROOT) + acc.listing("/d/x/a")
    rename = acc.file_access(acc.RENAME, "/d/x/a", True, ROOT)
    events = _trace((0, "stat /d/x/a", stat), (1, "mkdir /d/x", mkdir), (1, "rename -> /d/x/a", rename))
    assert isolating_order(steps(events), 0, 2) == [1, 2, 0]
    listing = acc.file_access(acc.READ, "/d/x", root=ROOT) + acc.listing("/d/x")
    events = _trace((0, "stat /d/x/a", stat + listing), (1, "mkdir /d/x", mkdir), (1, "rename", rename))
    assert isolating_order(steps(events), 0, 2) is None


def test_the_program_s_objects_come_before_the_engine_s_bookkeeping():
    """A later pair on an executor's idle count is tried after an earlier pair on a file."""
    idle = acc.on(acc.Obj(acc.ObjKind.ENGINE_STATE, "Executor#1.idle", engine=True), acc.WRITE)
    events = _trace((0, "stat /d/a", acc.file_access(acc.READ, "/d/a", root=ROOT)),
                    (1, "rename -> /d/a", acc.file_access(acc.RENAME, "/d/a", True, ROOT)),
                    (0, "put Executor#1.queue", idle), (1, "acquire Future#1", idle))
    assert [resource for _i, _j, resource in candidates(events)] == ["/d/a", "Executor#1.idle"]


def test_the_check_of_the_swapped_trace_finds_a_second_reversed_pair():
    a, b = acc.memory("Box#1.a"), acc.memory("Box#1.b")
    original = steps(_trace((0, "write a", acc.on(a, acc.WRITE)), (0, "write b", acc.on(b, acc.WRITE)),
                            (1, "read b", acc.on(b, acc.READ)), (1, "read a", acc.on(a, acc.READ))))
    both = steps(_trace((1, "read b", acc.on(b, acc.READ)), (1, "read a", acc.on(a, acc.READ)),
                        (0, "write a", acc.on(a, acc.WRITE)), (0, "write b", acc.on(b, acc.WRITE))))
    assert other_reversed(original, both, 0, 3) == (1, 2)
    alone = steps(_trace((0, "write a", acc.on(a, acc.WRITE)), (1, "read b", acc.on(b, acc.READ)),
                         (0, "write b", acc.on(b, acc.WRITE)), (1, "read a", acc.on(a, acc.READ))))
    assert other_reversed(original, alone, 1, 2) is None


# The selection, on real runs -------------------------------------------------------------------------------------


def _run(fn, order, values=()):
    session = Session(fn, resolve(None, {}, "explore").parts())
    with session.controlled():
        session.warm_up()
        return session.run_once(SwapChooser(order, values))


def _naive_swap(found, i, j):
    """The swap that only holds back the first thread's steps from i up to j (everything else kept in order)."""
    first = found[i][0].tid
    moved = [k for k in range(i, j + 1) if found[k][0].tid == first]
    kept = [k for k in range(i + 1, j + 1) if found[k][0].tid != first]
    return [*range(i), *kept, *moved, *range(j + 1, len(found))]


@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
def test_a_swap_that_reverses_a_second_pair_is_not_taken(strategy):
    """The latest conflicting pair of the shrunk schedule is on ``y``; its swap makes the failure go away, but only
    because it also reverses the pair on ``x``. That candidate is not taken: the pair named is the one on ``x``."""
    failure = racecheck.explore(reader_sees_x, strategy=strategy, schedules=200, seed=0).failure
    assert failure is not None
    found = steps(failure.events)
    on_y = [(i, j) for i, j, resource in candidates(failure.events) if resource == "Event#2"]
    assert on_y, failure.trace
    i, j = on_y[0]
    assert (found[i][0].op, found[j][0].op) == ("set Event#2", "is_set Event#2")
    names = identities(found)
    swapped = _run(reader_sees_x, [(names[k], found[k][0].op) for k in _naive_swap(found, i, j)])
    assert swapped.failure is None  # "swapped, it passes": the old rule would have named the pair on y
    assert other_reversed(found, steps(swapped.trace), i, j) is not None  # ... but x's pair was reversed too
    assert isolating_order(found, i, j) is None

    race = failure.race
    assert race is not None and race.resource == "Event#1", failure.trace
    assert (race.first.op, race.second.op) == ("set Event#1", "is_set Event#1")
    assert racecheck.replay(reader_sees_x, race.swapped_token).ok


@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
def test_a_lazy_init_pair_names_the_attribute_on_both_sides(strategy):
    failure = racecheck.explore(lazy_init, strategy=strategy, schedules=200, seed=0).failure
    race = failure.race
    assert race is not None, failure.trace
    assert race.resource == "Lazy#1._value"
    assert race.first.op == "read Lazy#1._value" and race.second.op == "write Lazy#1._value"
    assert race.first.tid != race.second.tid and race.swapped_outcome == "passes"
    assert str(failure).splitlines()[0] == str(race)
    assert racecheck.replay(lazy_init, race.swapped_token).ok


@pytest.mark.parametrize("fn", [lazy_init, reader_sees_x])
def test_a_replay_names_the_same_pair(fn):
    failure = racecheck.explore(fn, strategy="pct", schedules=200, seed=0).failure
    again = racecheck.replay(fn, failure.token)
    assert again.failure.race == failure.race
    assert racecheck.replay(fn, failure.token, race_budget=0).failure.race is None
