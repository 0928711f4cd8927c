"""Coverage: distinct interleavings by the order of conflicting operations; random and pct never rerun a schedule
and know when a small space is done.

The differential check: on small programs, unbounded exhaustive search (dfs) enumerates every schedule exactly
once, so a random or pct exploration that says it exhausted the space must have run exactly as many schedules,
and must have seen exactly the interleavings dfs saw.
"""

import threading

import pytest
import racecheck
from classic_bugs import lost_update_fixed
from racecheck.coverage import ChoiceTree, interleaving_key
from racecheck.trace import TraceEvent


def _events(*steps):
    return [TraceEvent(i, tid, op, "") for i, (tid, op) in enumerate(steps)]


def test_commuting_operations_are_one_interleaving():
    a = _events((1, "acquire Lock#1"), (2, "acquire Lock#2"))
    b = _events((2, "acquire Lock#2"), (1, "acquire Lock#1"))
    assert interleaving_key(a) == interleaving_key(b)


def test_reads_commute_but_a_write_orders_them():
    reads = [(1, "fs.stat /a"), (2, "fs.stat /a")]
    assert interleaving_key(_events(*reads)) == interleaving_key(_events(*reversed(reads)))
    write_first = _events((1, "fs.remove /a"), (2, "fs.stat /a"))
    read_first = _events((2, "fs.stat /a"), (1, "fs.remove /a"))
    assert interleaving_key(write_first) != interleaving_key(read_first)


def test_conflicting_order_is_another_interleaving():
    a = _events((1, "acquire Lock#1"), (2, "acquire Lock#1"))
    b = _events((2, "acquire Lock#1"), (1, "acquire Lock#1"))
    assert interleaving_key(a) != interleaving_key(b)


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
@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_small_space_is_exhausted_without_a_duplicate(fn, strategy):
    full = racecheck.explore(fn, strategy="dfs", preemption_bound=None, schedules=100_000)
    assert full.ok and full.exhausted
    result = racecheck.explore(fn, strategy=strategy, schedules=100_000, seed=1)
    assert result.ok and result.exhausted
    assert result.schedules == full.schedules  # every schedule once: no duplicate, none missed
    assert result.interleavings == full.interleavings


def test_interleavings_count_lock_orders_not_schedules():
    three = racecheck.explore(three_workers, strategy="dfs", preemption_bound=None, schedules=100_000)
    assert three.interleavings == 6  # the 3! orders in which the workers take the lock
    assert three.schedules > three.interleavings
    assert racecheck.explore(independent, strategy="dfs", preemption_bound=None, schedules=100_000).interleavings == 1


def test_budget_smaller_than_the_space_is_not_exhausted():
    result = racecheck.explore(three_workers, strategy="random", schedules=3, seed=0)
    assert result.ok and not result.exhausted and result.schedules == 3
    assert 1 <= result.interleavings <= 3
