"""The failure database: failing tokens kept per test in a folder, replayed first on the next run.

A bug found once is found again on schedule 0 of the next exploration (``result.replayed``), with a seed that
would otherwise take many schedules; a schedule that no longer fails (the bug was fixed) is dropped; a damaged
entry never breaks an exploration; tests and configurations do not see each other's entries.
"""

import functools
import os

import pytest
import racecheck
from classic_bugs import check_then_act, lost_update, lost_update_fixed
from racecheck.search.database import FailureDatabase

# The subject here is the failure database, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)


def _entries(root):
    return sorted(
        os.path.join(folder, name)
        for folder, _dirs, names in os.walk(root)
        for name in names
    )


def test_failure_is_saved_and_replayed_first(tmp_path):
    db = tmp_path / ".racecheck"
    first = _explore(lost_update, strategy="random", schedules=500, seed=0, database=str(db))
    assert not first.ok and first.replayed == 0
    entries = _entries(db)
    assert len(entries) == 1
    with open(entries[0], encoding="ascii") as handle:
        assert handle.read().strip() == first.failure.token

    again = _explore(lost_update, strategy="random", schedules=500, seed=12345, database=str(db))
    assert again.replayed == 1 and again.schedules == 1  # found on the kept schedule, before exploring
    assert again.failure.trace == first.failure.trace
    assert again.failure.token == first.failure.token
    assert _entries(db) == entries


def test_schedule_that_no_longer_fails_is_dropped(tmp_path):
    db = FailureDatabase(tmp_path)
    found = _explore(lost_update, strategy="pct", schedules=500, seed=0)
    key = f"{lost_update.__module__}.{lost_update.__qualname__}|files"
    db.save(key, found.failure.token)
    assert db.fetch(key) == [found.failure.token]

    # the same test name, now passing that schedule: the entry is replayed, passes and goes
    def fixed():
        lost_update_fixed()

    fixed.__qualname__ = "lost_update"
    fixed.__module__ = "classic_bugs"
    result = _explore(fixed, strategy="pct", schedules=3, database=str(tmp_path))
    assert result.replayed == 1 and result.ok
    assert db.fetch(key) == []


def test_damaged_and_foreign_entries_never_break_a_run(tmp_path):
    db = FailureDatabase(tmp_path)
    key = f"{check_then_act.__module__}.{check_then_act.__qualname__}|files"
    db.save(key, "rc1.garbage")
    foreign = _explore(lost_update, strategy="pct", schedules=500, seed=0).failure.token
    db.save(key, foreign)  # a token of another test under this key (a digest collision, or a hand-made folder)
    result = _explore(check_then_act, strategy="pct", schedules=500, seed=0, database=str(tmp_path))
    assert not result.ok and result.replayed == 0
    kept = db.fetch(key)
    assert "rc1.garbage" not in kept and foreign in kept and result.failure.token in kept


def test_entries_are_per_test_and_per_configuration(tmp_path):
    _explore(lost_update, strategy="pct", schedules=500, seed=0, database=str(tmp_path))
    other = _explore(check_then_act, strategy="pct", schedules=500, seed=0, database=str(tmp_path))
    assert other.replayed == 0
    windows = _explore(lost_update, strategy="pct", schedules=500, seed=0, database=str(tmp_path),
                                fs="windows")
    assert windows.replayed == 0  # another configuration: its own folder
    assert len(os.listdir(tmp_path)) == 3


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path):
    db = FailureDatabase(tmp_path / "db")
    for n in range(5):
        db.save("k", f"token-{n}")
    db.save("k", "token-0")  # idempotent
    names = _entries(tmp_path / "db")
    assert len(names) == 5 and not any(os.path.basename(n).startswith(".tmp") for n in names)
    assert sorted(db.fetch("k")) == [f"token-{n}" for n in range(5)]


def test_unusable_folder_is_ignored(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _explore(lost_update, strategy="pct", schedules=500, database=str(blocker / "db"))
    assert not result.ok  # found and reported; the database could not be written, which is no failure


@pytest.mark.parametrize("value", [3, b"x", ["a"]])
def test_bad_database_option_is_a_clear_error(value):
    with pytest.raises(TypeError, match="database"):
        _explore(lost_update, database=value)
