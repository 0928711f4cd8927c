"""Config checked when built (issue 49 item 8): every field has a rule, every bad value is one ``ConfigError`` line
naming the field, the value and what is allowed, at ``Config(...)`` and at ``explore(fn, field=...)`` alike; and a
lock a dataclass makes with ``field(default_factory=threading.Lock)`` is controlled."""

from __future__ import annotations

import dataclasses
import math
import threading

import pytest
import racecheck
from racecheck import Config, ConfigError
from racecheck.config import FIELD_NAMES
from racecheck.config_checks import RULES

# field -> a value it refuses (one per field: a field added to Config must be added here and to config_checks)
BAD = {
    "strategy": "bfs", "schedules": 0, "seed": "1", "instrument": 3, "exclude": [""], "preemption_bound": -1,
    "depth": 0, "fs": "ntfs", "on_crash": 3, "max_steps": True, "watchdog": 0, "shrink_budget": -1,
    "check_determinism": 1, "max_failures": 0, "race_budget": 1.5, "skip_duplicates": None, "preempt": "words",
    "memory": "yes", "sample_memory": 0, "files": None, "database": 3, "progress": "print", "one_cpu": 1,
    "fresh_threads": "no", "locations": "never", "data_races": "warn", "benign": [""], "atomic_races": "yes",
}
GOOD = {
    "fs": [None, "posix", "windows", True], "preemption_bound": [0, 3, None, math.inf, "default"],
    "watchdog": [None, 0.5, 2], "preempt": [None, "lines", ["racecheck"]], "instrument": ["a.b", ["a", "b"], None],
    "benign": ["Stats.n", ["f.py:12"]], "database": [None, ".racecheck"],
}


def test_every_field_has_a_rule_and_a_refused_value():
    assert set(RULES) == set(FIELD_NAMES)
    assert set(BAD) == set(FIELD_NAMES)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_one_line_naming_field_value_and_allowed(name):
    with pytest.raises(ConfigError) as caught:
        Config(**{name: BAD[name]})
    error = caught.value
    text = str(error)
    assert "\n" not in text and text.startswith(f"{name} must be ") and text.endswith(f", not {error.value!r}")
    assert error.field == name and error.allowed in text
    assert isinstance(error, ValueError) and isinstance(error, TypeError)  # as the refusals were before


@pytest.mark.parametrize("name,value", [(name, value) for name, values in GOOD.items() for value in values])
def test_allowed_values_are_taken(name, value):
    Config(**{name: value})


def test_fake_fs_objects_are_taken():
    from racecheck.fakefs import FakeFS

    assert isinstance(Config(fs=FakeFS(semantics="windows")).fs, FakeFS)


def test_explore_refuses_a_bad_fs_before_running_anything():
    ran = []
    with pytest.raises(ConfigError, match=r"^fs must be None \(the real disk\), 'posix', 'windows', True or a "
                                          r"racecheck.fakefs.FakeFS, not 'ntfs'$"):
        racecheck.explore(lambda: ran.append(1), fs="ntfs")
    assert ran == []


@dataclasses.dataclass
class Stats:
    n: int = 0
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


@dataclasses.dataclass
class MoreStats(Stats):
    events: threading.Event = dataclasses.field(default_factory=threading.Event)


def _locked_stats() -> None:
    stats = MoreStats()

    def bump() -> None:
        with stats.lock:
            stats.n += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stats.n == 2


def _split_stats() -> None:
    stats = Stats()

    def bump() -> None:
        with stats.lock:
            seen = stats.n
        with stats.lock:
            stats.n = seen + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stats.n == 2


def test_a_dataclass_default_factory_lock_is_controlled():
    result = racecheck.explore(_locked_stats, strategy="dpor", schedules=100)
    assert result.ok and result.exhausted, result.summary()
    assert "real locks made before the run" not in result.coverage.text()
    assert not result.data_races
    racy = racecheck.explore(_split_stats, strategy="dpor", schedules=100)
    assert racy.failure is not None and "real locks" not in racy.coverage.text()
    # given back after the exploration: real primitives again, on the field and from __init__
    assert MoreStats.__dataclass_fields__["lock"].default_factory is threading.Lock
    assert MoreStats.__dataclass_fields__["events"].default_factory is threading.Event
    assert type(MoreStats().lock) is type(threading.Lock())
