"""Line-level preemption (``preempt="lines"``): plain-Python data races found without ``racecheck.point()``.

Without it, ``self.n += 1`` runs atomically between scheduling points and exhaustive search proves the racy
counter "correct"; with it, the lost update is found, shrunk to one preemption, replayed from its token, and the
racing pair names the two stores. The locked counter passes the same exhaustive search.
"""

import threading

import pytest
import racecheck


class Counter:
    def __init__(self):
        self.n = 0

    def increment(self):
        self.n += 1


def racy_counter():
    counter = Counter()
    threads = [threading.Thread(target=counter.increment) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.n == 2, f"lost update: n is {counter.n}"


class LockedCounter:
    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def increment(self):
        with self.lock:
            self.n += 1


def locked_counter():
    counter = LockedCounter()
    threads = [threading.Thread(target=counter.increment) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.n == 2


def check_then_act_dict():
    cache = {}
    created = []

    def get_or_create(key):
        if key not in cache:
            created.append(key)
            cache[key] = object()
        return cache[key]

    threads = [threading.Thread(target=get_or_create, args=("k",)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(created) == 1, f"created {len(created)} times"


def test_without_line_points_the_race_is_invisible():
    result = racecheck.explore(racy_counter, strategy="dfs", preemption_bound=None, schedules=10_000)
    assert result.ok and result.exhausted


@pytest.mark.parametrize("strategy", ["dfs", "random", "pct", "pos"])
def test_lost_update_found_with_line_points(strategy):
    result = racecheck.explore(racy_counter, strategy=strategy, schedules=2000, seed=0, preempt="lines")
    assert not result.ok, f"{strategy} missed the lost update"
    failure = result.failure
    assert "lost update: n is 1" in failure.message
    assert failure.preemptions == 1
    assert "store attr n" in failure.trace
    again = racecheck.replay(racy_counter, failure.token, preempt="lines")
    assert again.failure.trace == failure.trace


def test_racing_pair_of_the_lost_update_is_named():
    failure = racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").failure
    race = failure.race
    assert race is not None
    assert race.first.tid != race.second.tid
    assert "test_lines.py" in race.first.loc and "test_lines.py" in race.second.loc


def test_check_then_act_on_a_dict_found():
    result = racecheck.explore(check_then_act_dict, strategy="pct", schedules=2000, seed=0, preempt="lines")
    assert not result.ok and "created 2 times" in result.failure.message


def test_locked_counter_passes_exhaustively():
    result = racecheck.explore(locked_counter, strategy="dfs", preemption_bound=2, schedules=20_000, preempt="lines")
    assert result.ok and result.exhausted


def test_token_records_line_points():
    failure = racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt="lines").failure
    with pytest.raises(racecheck.TokenError, match="configuration"):
        racecheck.replay(racy_counter, failure.token)


def test_tracing_is_removed_afterwards():
    racecheck.explore(locked_counter, strategy="random", schedules=3, preempt="lines")
    assert threading.gettrace() is None


def test_per_module_preemption_and_bad_values():
    import sys

    here = sys.modules[__name__]
    assert not racecheck.explore(racy_counter, strategy="dfs", schedules=2000, preempt=[here]).ok
    with pytest.raises(ValueError, match="preempt"):
        racecheck.explore(racy_counter, preempt="words")
