"""The racing pair's search in near-linear time, checked against the quadratic code it replaced.

``race_candidates.latest_conflicts`` walks a trace once (per object, per thread, the last access of each kind);
``race_order.isolating_order`` meets only the moved steps that share an object with the next one;
``race_order.other_reversed`` walks the swapped run once. The references below are the scans back over every
earlier step they replaced (the tree before issue 47): on hypothesis-generated traces (memory, a lock, a FIFO
queue, a wildcard, up to four threads) the new candidates include every old one and each is the latest conflicting
step of its thread, the isolating orders are the same, and a second reversed pair is found exactly when the old
scan found one.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime import access as acc
from racecheck.runtime.relation import active
from racecheck.runtime.trace import TraceEvent
from racecheck.search.dependency import conflicts, steps
from racecheck.search.race_candidates import latest_conflicts
from racecheck.search.race_order import (
    conflict_objects,
    isolating_order,
    one_way,
    ordering,
    other_reversed,
    queue_counts,
    reorders,
)

OBJS = [acc.Obj(acc.ObjKind.MEMORY, "Box#1.a"), acc.Obj(acc.ObjKind.MEMORY, "Box#1.b"),
        acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.Obj(acc.ObjKind.FIFO_QUEUE, "Queue#1"), acc.MEMORY_OBJ]
KINDS = {acc.ObjKind.MEMORY: [acc.READ, acc.WRITE], acc.ObjKind.LOCK: [acc.ACQUIRE, acc.RELEASE],
         acc.ObjKind.FIFO_QUEUE: [acc.PUT, acc.GET], acc.ObjKind.ANY_MEMORY: [acc.WRITE]}


@st.composite
def traces(draw):
    size = draw(st.integers(2, 24))
    events = []
    for step in range(size):
        tid = draw(st.integers(0, 3))
        touched = []
        for _ in range(draw(st.integers(0, 3))):
            obj = draw(st.sampled_from(OBJS))
            touched.append(acc.Access(obj, draw(st.sampled_from(KINDS[obj.kind]))))
        events.append(TraceEvent(step, tid, f"op{len(touched)}", "", "", tuple(touched)))
    return events


def _old_candidates(found):
    """Before: for every step j, the latest earlier step of any other thread that conflicts with it."""
    pairs = set()
    for j in range(len(found) - 1, 0, -1):
        for i in range(j - 1, -1, -1):
            if found[i].event.tid != found[j].event.tid and conflicts(found[i].accesses, found[j].accesses):
                pairs.add((i, j))
                break
    return pairs


def _old_isolating_order(found, i, j):
    if one_way(found, i, j):
        return None
    counts = queue_counts(found)
    relation = active()
    after, threads, moved = [i], {found[i].tid}, []
    reach = {a.obj for a in found[i].accesses if not relation.is_wildcard(a.obj) and a.obj is not acc.FAIRNESS_OBJ}
    for k in range(i + 1, j + 1):
        tid = found[k].tid
        tainted = tid in threads or any(a.obj in reach for a in found[k].accesses) and any(
            found[t].tid != tid and ordering(found, counts, t, k) for t in after if not (t == i and k == j))
        if not tainted:
            continue
        if k == j:
            return None
        after.append(k)
        moved.append(k)
        threads.add(tid)
        reach.update(a.obj for a in found[k].accesses
                     if not relation.is_wildcard(a.obj) and a.obj is not acc.FAIRNESS_OBJ)
    held = set(moved)
    kept = [k for k in range(i + 1, j) if k not in held]
    return [*range(i), *kept, j, i, *moved, *range(j + 1, len(found))]


def _old_other_reversed(original, swapped, i, j, at):
    counts = queue_counts(swapped)
    for x in range(len(original)):
        for y in range(x + 1, len(original)):
            if at[y] > at[x] or original[x].tid == original[y].tid or (x, y) == (i, j):
                continue
            if reorders(original[x].accesses, original[y].accesses, counts[at[y]]):
                return x, y
    return None


@settings(max_examples=300, deadline=None)
@given(traces())
def test_the_one_pass_candidates_hold_every_old_one_each_the_latest_of_its_thread(events):
    found = steps(events)
    new = latest_conflicts(found)
    assert len(new) == len(set(new))
    assert _old_candidates(found) <= set(new)
    for i, j in new:
        assert found[i].event.tid != found[j].event.tid
        assert conflicts(found[i].accesses, found[j].accesses)
        later = [k for k in range(i + 1, j) if found[k].event.tid == found[i].event.tid
                 and conflict_objects(found[k].accesses, found[j].accesses, wildcards=False)]
        named = conflict_objects(found[i].accesses, found[j].accesses, wildcards=False)
        assert not (named and later), (i, j, later)


@settings(max_examples=300, deadline=None)
@given(traces(), st.data())
def test_isolating_orders_and_second_reversals_as_the_quadratic_scans_found_them(events, data):
    found = steps(events)
    pairs = latest_conflicts(found)
    if not pairs:
        return
    i, j = data.draw(st.sampled_from(pairs))
    assert isolating_order(found, i, j) == _old_isolating_order(found, i, j)
    # a swapped run: the same steps, each thread's in its order, threads interleaved another way
    queues = {}
    for step in found:
        queues.setdefault(step.event.tid, []).append(step.event)
    order = []
    while queues:
        tid = data.draw(st.sampled_from(sorted(queues)))
        order.append(queues[tid].pop(0))
        if not queues[tid]:
            del queues[tid]
    swapped = steps([event._replace(step=n) for n, event in enumerate(order)])
    position = {(s.event.tid, s.nth): n for n, s in enumerate(swapped)}
    at = [position[(s.event.tid, s.nth)] for s in found]
    new = other_reversed(found, swapped, i, j)
    old = _old_other_reversed(found, swapped, i, j, at)
    assert (new is None) == (old is None), (new, old)
    if new is not None:
        x, y = new
        assert x < y and at[y] < at[x] and (x, y) != (i, j)
