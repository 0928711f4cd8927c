"""Every field of a ``Config`` checked when the Config is built, one rule per field, each refusal one line.

A bad value found only when the exploration reaches it (``fs="ntfs"`` once the first run makes its store) ended in
racecheck's ``InternalError`` with a traceback, long after the mistake. Here each field has a rule: what it
allows, in words, and a test of the value; a value that fails is a ``ConfigError`` (a ``ValueError`` and a
``TypeError`` both, as the refusals were before) naming the field, the value and what is allowed, so the API, the
CLI and the pytest plugin can print it as it is. ``tests/engine/test_config_checks.py`` fails for a field of
``Config`` with no rule here.
"""

from __future__ import annotations

import math
import os
import types
from collections.abc import Callable
from typing import Any

from racecheck.errors import ConfigError
from racecheck.search.data_races import MODES as DATA_RACE_MODES
from racecheck.search.registry import STRATEGY_NAMES

__racecheck_engine__ = True

LOCATION_MODES = ("failures", "always")
FS_WORDS = "None (the real disk), 'posix', 'windows', True or a racecheck.fakefs.FakeFS"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _at_least(low: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda value: _is_int(value) and value >= low), f">= {low} (an int)"


def _flag() -> tuple[Callable[[Any], bool], str]:
    return (lambda value: isinstance(value, bool)), "True or False"


def _one_of(choices: tuple[str, ...]) -> tuple[Callable[[Any], bool], str]:
    return (lambda value: isinstance(value, str) and value in choices), "one of " + ", ".join(map(repr, choices))


def _is_fake_fs(value: Any) -> bool:
    """A ``racecheck.fakefs.FakeFS`` (or a subclass), told without importing the fake filesystem (the engine loads
    it only when a Config sets ``fs``)."""
    return any(cls.__name__ == "FakeFS" and cls.__module__ == "racecheck.fakefs.spec" for cls in type(value).__mro__)


def _fs(value: Any) -> bool:
    return value is None or value is True or value in ("posix", "windows") or _is_fake_fs(value)


def _bound(value: Any) -> bool:
    return value is None or value == "default" or (isinstance(value, float) and value == math.inf) or (
        _is_int(value) and value >= 0)


def _watchdog(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
                             and math.isfinite(value))


def _modules(value: Any) -> bool:
    """A tuple of modules or non-empty dotted names (``Config`` has made one name a tuple already)."""
    return isinstance(value, tuple) and all(
        isinstance(item, types.ModuleType) or (isinstance(item, str) and item) for item in value)


def _preempt(value: Any) -> bool:
    return value is None or value == "lines" or isinstance(value, types.ModuleType) or _modules(value)


def _callable_or_none(value: Any) -> bool:
    return value is None or callable(value)


def _patterns(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(item, str) and item for item in value)


# field -> (test, what it allows). Every field of Config has a row.
RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "strategy": _one_of(STRATEGY_NAMES),
    "schedules": _at_least(1),
    "seed": (_is_int, "an int"),
    "instrument": (_modules, "modules or dotted module names"),
    "exclude": (_modules, "modules or dotted module names"),
    "preemption_bound": (_bound, ">= 0 (an int), None or math.inf (no bound), or 'default'"),
    "depth": _at_least(1),
    "fs": (_fs, FS_WORDS),
    "on_crash": (_callable_or_none, "callable or None"),
    "max_steps": _at_least(1),
    "watchdog": (_watchdog, "a positive number of seconds or None"),
    "shrink_budget": _at_least(0),
    "check_determinism": _flag(),
    "max_failures": _at_least(1),
    "race_budget": _at_least(0),
    "skip_duplicates": _flag(),
    "preempt": (_preempt, "None, 'lines' or a list of modules"),
    "memory": _flag(),
    "sample_memory": _flag(),
    "files": _flag(),
    "database": (lambda value: value is None or isinstance(value, (str, os.PathLike)), "a folder path or None"),
    "progress": (_callable_or_none, "callable or None"),
    "one_cpu": _flag(),
    "fresh_threads": _flag(),
    "locations": _one_of(LOCATION_MODES),
    "data_races": _one_of(DATA_RACE_MODES),
    "benign": (_patterns, "patterns (non-empty strings)"),
    "atomic_races": _flag(),
}


def check(config: Any, names: tuple[str, ...]) -> None:
    """Check the fields ``names`` of ``config`` in order; the first bad one is a ``ConfigError``."""
    for name in names:
        test, allowed = RULES[name]
        value = getattr(config, name)
        if not test(value):
            raise ConfigError(name, value, allowed)
