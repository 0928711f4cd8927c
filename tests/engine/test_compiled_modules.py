"""A module's rewritten code is kept per process by what makes it differ, not by its file name alone: two modules
loaded from one file each get code that names their own globals, and a file edited and reloaded runs its new code
under memory watch (its old rewritten twin, matched by name and line, once replaced the new functions' code)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading

import racecheck

SOURCE = """
count = 0


def bump():
    global count
    seen = count
    count = seen + 1


def value():
    return {value}
"""


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_two_modules_from_one_file_name_their_own_globals(tmp_path):
    path = tmp_path / "edges2_twin.py"
    path.write_text(SOURCE.format(value=1))
    first, second = _load("edges2_twin_a", path), _load("edges2_twin_b", path)
    try:
        def bump_both():
            threads = [threading.Thread(target=first.bump), threading.Thread(target=second.bump)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        result = racecheck.explore(bump_both, strategy="dpor", schedules=50)
        assert result.ok and result.exhausted, result.failure
        assert result.data_races == [], [race.describe() for race in result.data_races]  # two objects, no race
        assert result.interleavings == 1, result  # nothing is shared: one class of interleavings
    finally:
        for name in ("edges2_twin_a", "edges2_twin_b"):
            sys.modules.pop(name, None)


def test_a_file_edited_and_reloaded_runs_its_new_code(tmp_path):
    path = tmp_path / "edges2_edited.py"
    path.write_text(SOURCE.format(value=1))
    sys.path.insert(0, str(tmp_path))
    module = importlib.import_module("edges2_edited")
    try:
        seen = []

        def read_value():
            t = threading.Thread(target=module.bump)
            t.start()
            seen.append(module.value())
            t.join()

        assert racecheck.explore(read_value, strategy="random", schedules=2, seed=0).ok
        assert set(seen) == {1}
        path.write_text(SOURCE.format(value=22))  # another size: the import system and linecache see the change
        module = importlib.reload(module)
        assert module.value() == 22
        seen.clear()
        assert racecheck.explore(read_value, strategy="random", schedules=2, seed=0).ok
        assert set(seen) == {22}, seen
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("edges2_edited", None)
