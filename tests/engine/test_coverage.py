"""Coverage: distinct interleavings by the order of conflicting operations; random, pct and pos never rerun a
schedule and know when a small space is done (by default; ``skip_duplicates=False`` opts out), and an exploration
tells a ``progress=`` callback what it covered after every schedule, the same sequence in any process.

The differential check: on small programs, unbounded exhaustive search (dfs) enumerates every schedule exactly
once, so a random or pct exploration that says it exhausted the space must have run exactly as many schedules,
and must have seen exactly the interleavings dfs saw.
"""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import racecheck
from classic_bugs import lost_update_fixed
from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime import access as acc
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.relation import RELATION
from racecheck.runtime.trace import TraceEvent
from racecheck.search.coverage import ChoiceTree, Progress, Steering, interleaving_key, schedule_digest

LOCK1 = acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.ACQUIRE)
LOCK2 = acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#2"), acc.ACQUIRE)


def _events(*steps):
    return [TraceEvent(i, tid, "op", "", "", access) for i, (tid, access) in enumerate(steps)]


def test_commuting_operations_are_one_interleaving():
    a = _events((1, LOCK1), (2, LOCK2))
    b = _events((2, LOCK2), (1, LOCK1))
    assert interleaving_key(a) == interleaving_key(b)


def test_reads_commute_but_a_write_orders_them():
    stat = acc.file_access(acc.READ, "/r/a", root="/r")
    remove = acc.file_access(acc.REMOVE, "/r/a", True, "/r")
    reads = [(1, stat), (2, stat)]
    assert interleaving_key(_events(*reads)) == interleaving_key(_events(*reversed(reads)))
    write_first = _events((1, remove), (2, stat))
    read_first = _events((2, stat), (1, remove))
    assert interleaving_key(write_first) != interleaving_key(read_first)


def test_conflicting_order_is_another_interleaving():
    a = _events((1, LOCK1), (2, LOCK1))
    b = _events((2, LOCK1), (1, LOCK1))
    assert interleaving_key(a) != interleaving_key(b)


def test_the_display_text_decides_nothing():
    a = [TraceEvent(0, 1, "acquire Lock#1", ""), TraceEvent(1, 2, "acquire Lock#1", "")]
    b = [TraceEvent(0, 2, "acquire Lock#1", ""), TraceEvent(1, 1, "acquire Lock#1", "")]
    assert interleaving_key(a) == interleaving_key(b)  # no accesses recorded: nothing to order


def _reference_key(events):
    """The interleaving key by its definition, one access at a time: per object, the accesses in trace order, each
    named by its point (thread, the step's point, or for the accesses its ``marks`` cover, their own; a note belongs
    to its own point; the thread's step number where a trace records no points); a wildcard (a bare point's
    ``anything``, unresolved memory) written out as a write of every object it covers; a run of mutually commuting
    accesses collapsed into the set of its threads, each with its first point; a thread's consecutive single
    accesses kept once."""
    counts = {}
    running = {}
    yields = any(acc.YIELDED[0] in event.access for event in events)
    flat = []  # (object, kind, who)
    for event in events:
        if event.switch == "info":
            fallback = (event.tid, counts.get(event.tid, 1) - 1)
            who = (event.tid, event.at) if event.at >= 0 else running.get(event.tid, fallback)
        else:
            who = (event.tid, event.at) if event.at >= 0 else (event.tid, counts.get(event.tid, 0))
            counts[event.tid] = counts.get(event.tid, 0) + 1
            running[event.tid] = who
        yielded = acc.YIELDED[0] in event.access
        extra = (acc.FAIRNESS_READ,) if yields and event.switch != "info" and not yielded else ()
        own = len(event.access) - len(event.marks)
        for position, one in enumerate(event.access + extra):
            at = who if position < own or position >= len(event.access) else (event.tid, event.marks[position - own])
            flat.append((one.obj, one.kind, at))
    objects = sorted({obj for obj, _, _ in flat if obj != acc.FAIRNESS_OBJ}, key=str) if any(
        obj in (acc.ANYTHING_OBJ, acc.MEMORY_OBJ) for obj, _, _ in flat) else []
    history = {}
    for obj, kind, who in flat:
        if obj == acc.ANYTHING_OBJ or obj == acc.MEMORY_OBJ:
            covered = [o for o in objects if obj == acc.ANYTHING_OBJ or o.is_memory]
            touched = [(o, acc.WRITE) for o in covered]
        else:
            touched = [(obj, kind)]
        for o, k in touched:
            line = history.setdefault(o, [])
            group = RELATION.commuting_run(k, o.kind)
            if line and group is not None and line[-1][0] == group:
                line[-1][1].append(who)
            else:
                line.append((group, [who]))
    texts = []
    for obj in sorted(history, key=str):
        groups = []
        for group, members in history[obj]:
            if group is not None:
                first = {}
                for tid, point in sorted(members):
                    first.setdefault(tid, point)
                groups.append("\x01".join(sorted(f"{tid}.{point}" for tid, point in first.items())))
            elif not (groups and groups[-1][0] is None and groups[-1][1] == members[0][0]):
                groups.append((None, members[0][0], f"{members[0][0]}.{members[0][1]}"))
        texts.append(obj.text + "\x02" + "\x00".join(g if isinstance(g, str) else g[2] for g in groups))
    text = "\x03".join(texts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


QUEUE1 = acc.Obj(acc.ObjKind.FIFO_QUEUE, "Queue#1")
EVENT1 = acc.Obj(acc.ObjKind.EVENT, "Event#1")
CONDITION1 = acc.Obj(acc.ObjKind.CONDITION, "Condition#1")
_ACCESSES = [
    LOCK1, acc.on(acc.Obj(acc.ObjKind.LOCK, "Lock#1"), acc.RELEASE), LOCK2, acc.on(QUEUE1, acc.PUT),
    acc.on(QUEUE1, acc.GET), acc.on(QUEUE1, acc.READ), acc.on(EVENT1, acc.READ), acc.on(EVENT1, acc.WRITE),
    acc.on_thread(1, acc.START), acc.on_thread(1, acc.JOIN), acc.on_thread(1, acc.BEGIN), (), acc.MEMORY,
    acc.file_access(acc.READ, "/r/a", root="/r"), acc.file_access(acc.READ, "/r/a/b", root="/r"),
    acc.file_access(acc.REMOVE, "/r/a/b", True, "/r"),
    acc.file_access(acc.RENAME, "/r/a/b", True, "/r") + acc.file_access(acc.RENAME, "/r/c/d", True, "/r"),
    acc.file_access(acc.CREATE, "/r/a/c", True, "/r"), acc.file_access(acc.READ, "/r/a", root="/r")
    + acc.listing("/r/a"), acc.on(CONDITION1, acc.WAIT), acc.on(CONDITION1, acc.NOTIFY), acc.YIELDED,
    LOCK1 + acc.YIELDED,
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(_ACCESSES), st.sampled_from(["", "switch", "preempt",
                                                                                          "info"])), max_size=40))
def test_interleaving_key_matches_its_definition(steps):
    # a yield marks the step that ended in it, never a note
    events = [TraceEvent(i, tid, "op", "", switch,
                         access if switch != "info" else tuple(a for a in access if a != acc.YIELDED[0]))
              for i, (tid, access, switch) in enumerate(steps)]
    assert interleaving_key(events) == _reference_key(events)


def test_interleaving_key_matches_its_definition_on_explored_traces():
    seen = []

    def program():
        ready, lock = threading.Event(), threading.Lock()

        def look(n):
            ready.is_set()  # reads, which the key collapses while no write comes between them
            with lock:
                ready.is_set()
            if n == 0:
                ready.set()

        threads = [threading.Thread(target=look, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seen.append(list(racecheck.runtime.current_run().trace))

    racecheck.explore(program, strategy="random", schedules=60, seed=3)
    assert len(seen) >= 30
    assert any(a.kind == acc.READ for trace in seen for e in trace for a in e.access)
    for trace in seen:
        assert interleaving_key(trace) == _reference_key(trace)


def test_choice_tree_completes_when_every_option_ran():
    tree = ChoiceTree()
    assert tree.add([0, 0], [2, 2]) and not tree.complete
    assert tree.add([0, 1], [2, 2]) and not tree.complete
    assert not tree.add([0, 1], [2, 2]) and tree.duplicates == 1
    assert tree.add([1], [2]) and tree.complete


def three_workers():
    lock = threading.Lock()
    total = []

    def work(n):
        with lock:
            total.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(total) == [0, 1, 2]


def independent():
    a, b = threading.Lock(), threading.Lock()

    def first():
        with a:
            pass

    def second():
        with b:
            pass

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("fn", [three_workers, lost_update_fixed, independent])
@pytest.mark.parametrize("strategy", ["random", "pct", "pos"])
def test_small_space_is_exhausted_without_a_duplicate_by_default(fn, strategy):
    full = racecheck.explore(fn, strategy="dfs", preemption_bound=None, schedules=100_000)
    assert full.ok and full.exhausted
    result = racecheck.explore(fn, strategy=strategy, schedules=100_000, seed=1)  # the defaults
    assert result.ok and result.exhausted
    assert result.schedules == result.distinct == full.schedules  # every schedule once: no duplicate, none missed
    assert result.interleavings == full.interleavings
    note = f"exhausted: all {full.schedules} distinct schedules explored"
    assert result.exhausted_note == note and result.summary().splitlines()[0].endswith(f"; {note}")
    assert full.exhausted_note == note  # unbounded dfs: the same sentence


def test_bounded_dfs_says_its_bound_when_exhausted():
    result = racecheck.explore(three_workers, strategy="dfs", preemption_bound=1, schedules=100_000)
    assert result.exhausted
    assert result.exhausted_note == (
        f"exhausted: all {result.schedules} distinct schedules with at most 1 preemption explored"
    )


def test_interleavings_count_lock_orders_not_schedules():
    three = racecheck.explore(three_workers, strategy="dfs", preemption_bound=None, schedules=100_000)
    assert three.interleavings == 6  # the 3! orders in which the workers take the lock
    assert three.schedules > three.interleavings
    assert racecheck.explore(independent, strategy="dfs", preemption_bound=None, schedules=100_000).interleavings == 1


def test_interleavings_counted_in_batches_equal_those_counted_one_by_one():
    """Without a progress callback the keys are computed in batches (64 schedules at a time, and at the end):
    the same count, over more schedules than one batch holds, as when every schedule is counted at once."""
    keys = []
    batched = racecheck.explore(three_workers, strategy="random", schedules=150, seed=2, skip_duplicates=False)
    eager = racecheck.explore(three_workers, strategy="random", schedules=150, seed=2, skip_duplicates=False,
                              progress=lambda p: keys.append(p.interleaving))
    assert batched.schedules == eager.schedules == 150
    assert batched.interleavings == eager.interleavings == len(set(keys)) == 6


def test_budget_smaller_than_the_space_is_not_exhausted():
    result = racecheck.explore(three_workers, strategy="random", schedules=3, seed=0, skip_duplicates=True)
    assert result.ok and not result.exhausted and result.schedules == 3
    assert 1 <= result.interleavings <= 3


def test_without_skip_duplicates_the_budget_is_spent_as_before():
    """The opt-out: independent samples, repeats included, the whole budget spent, never called exhausted."""
    full = racecheck.explore(independent, strategy="dfs", preemption_bound=None, schedules=100_000)
    result = racecheck.explore(independent, strategy="random", schedules=full.schedules * 3, seed=0,
                               skip_duplicates=False)
    assert result.ok and result.schedules == full.schedules * 3 and not result.exhausted
    assert result.distinct <= full.schedules < result.schedules  # it ran some schedules more than once
    assert result.interleavings == 1 and result.exhausted_note == ""
    default = racecheck.explore(independent, strategy="random", schedules=full.schedules * 3, seed=0)
    assert default.exhausted and default.schedules == full.schedules


def test_choice_tree_keeps_unshared_paths_compact_and_splits_them_when_followed():
    tree = ChoiceTree()
    long = [0] * 500
    assert tree.add(long, [2] * 500)
    (first,) = tree.root.children.values()
    assert first.tail is not None and not first.children  # one run: a compact tail, not a node per decision
    assert tree.add([0] * 3 + [1] + [0] * 10, [2] * 14)  # shares three decisions, then parts ways
    node, depth = tree.root, 0
    while node.children:
        assert len(node.children) <= 2
        node = node.children[0]
        depth += 1
    assert depth == 4 and node.tail is not None  # expanded only where the two runs share a path
    assert not tree.add(long, [2] * 500) and tree.duplicates == 1 and tree.distinct == 2


def test_steering_takes_the_first_option_not_run_to_its_end():
    class Always(Chooser):
        def pick_thread(self, decision):
            return 0

        def pick_value(self, n, label):
            return 0

    tree = ChoiceTree()
    tree.add([0, 0], [2, 2])
    steering = Steering(Always(), tree)
    assert steering.pick_value(2, "x") == 0  # not complete below 0 yet: the strategy's pick stands
    assert steering.pick_value(2, "x") == 1  # [0, 0] was run to its end: redirected
    tree.add([0, 1], [2, 2])
    assert Steering(Always(), tree).pick_value(2, "x") == 1  # the whole 0 subtree is done


def test_progress_snapshots_after_every_schedule():
    seen: list[Progress] = []
    result = racecheck.explore(lost_update_fixed, strategy="random", schedules=1000, seed=3, progress=seen.append)
    assert result.exhausted and len(seen) == result.schedules
    assert [s.schedules for s in seen] == list(range(1, result.schedules + 1))
    assert [s.index for s in seen] == list(range(result.schedules))
    assert all(s.requested == 1000 and s.failures == 0 and not s.failed for s in seen)
    assert [s.distinct for s in seen] == [s.schedules for s in seen]  # never a duplicate
    assert len({s.schedule for s in seen}) == len(seen)
    counts = [s.interleavings for s in seen]
    assert counts == sorted(counts) and counts[-1] == result.interleavings == len({s.interleaving for s in seen})
    assert [s.exhausted for s in seen] == [False] * (len(seen) - 1) + [True]


def test_progress_counts_failures_and_dfs_says_exhausted_on_its_last_schedule():
    from classic_bugs import lost_update

    seen: list[Progress] = []
    result = racecheck.explore(lost_update, strategy="pct", schedules=200, seed=0, progress=seen.append,
                               race_budget=0, shrink_budget=0)
    assert not result.ok and seen[-1].failed and seen[-1].failures == 1
    assert seen[-1].index == result.failure.schedule_index
    assert all(not s.failed and s.failures == 0 for s in seen[:-1])
    dfs: list[Progress] = []
    full = racecheck.explore(independent, strategy="dfs", preemption_bound=None, progress=dfs.append)
    assert full.exhausted and dfs[-1].exhausted and not any(s.exhausted for s in dfs[:-1])


def test_a_progress_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="progress must be callable"):
        racecheck.explore(independent, progress=3)


def sequence_of_schedules() -> list[list]:
    """What schedules a seeded exploration ran, in order: index, choice digest, interleaving, counts."""
    out: list[list] = []

    def record(s: Progress) -> None:
        out.append([s.index, s.schedule, s.interleaving, s.distinct, s.interleavings, s.exhausted])

    for strategy in ("random", "pct", "pos"):
        racecheck.explore(lost_update_fixed, strategy=strategy, schedules=1000, seed=7, progress=record)
    return out


def test_same_seed_same_sequence_of_schedules_in_another_process():
    here = sequence_of_schedules()
    assert here == sequence_of_schedules()
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_coverage
        print(json.dumps(test_coverage.sequence_of_schedules()))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONHASHSEED="977"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here
    ends = [i for i, row in enumerate(here) if row[-1]]  # each strategy ran the whole space, once per schedule
    size = len(here) // 3
    assert ends == [size - 1, 2 * size - 1, 3 * size - 1] and len({row[1] for row in here}) == size
    assert schedule_digest([0, 1]) != schedule_digest([1, 0]) and len(schedule_digest([])) == 16
