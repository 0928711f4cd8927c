"""A child's one thread of the run makes its plain memory accesses without points (``child_memory.private``, issue
48 item 6): fewer steps, the same verdicts. A race between two threads of one child (the writer ended, never joined,
before the read) and a lost update across processes are still found by dpor and pct, the data race still reported
from a schedule where the read joined its thread's step; dpor still exhausts the clean programs."""

import cost48_programs as programs
import pytest
import racecheck
from racecheck.control.processes import child_memory


def explore(fn, cut, monkeypatch, **options):
    monkeypatch.setattr(child_memory, "LONE_CUT", cut)  # the parent tells each child it starts
    options = {"strategy": "dpor", "schedules": 100, "seed": 1, "shrink_budget": 0, "race_budget": 0, **options}
    return racecheck.explore(fn, **options)


@pytest.mark.parametrize("name", ["lone_workers", "shared_total_locked"])
def test_dpor_still_exhausts_the_clean_programs_in_fewer_steps(name, monkeypatch):
    fn = getattr(programs, name)
    points, cut = explore(fn, False, monkeypatch), explore(fn, True, monkeypatch)
    for result in (points, cut):
        assert result.ok and result.exhausted and result.data_races == [], result.failure
    assert cut.distinct <= points.distinct, (cut.distinct, points.distinct)
    assert cut.max_steps_seen < points.max_steps_seen, (cut.max_steps_seen, points.max_steps_seen)


@pytest.mark.parametrize("strategy", ["dpor", "pct"])
def test_a_lost_update_across_processes_is_still_found(strategy, monkeypatch):
    result = explore(programs.shared_total, True, monkeypatch, strategy=strategy)
    assert result.failure is not None and "lost update across processes: 1" in result.failure.message, result


@pytest.mark.parametrize("strategy", ["dpor", "pct"])
def test_a_race_between_two_threads_of_one_child_is_still_found(strategy, monkeypatch):
    result = explore(programs.read_before_join, True, monkeypatch, strategy=strategy)
    assert result.failure is not None and "read before the write: 0" in result.failure.message, result
    assert [race.obj for race in result.data_races] == ["P1.dict#1['v']"], result.data_races


def test_a_read_without_a_point_still_makes_its_data_race(monkeypatch):
    """pct's first schedule with seed 0 runs the writer to its end before the child's read, while the parent can
    still run: the read (and the busy work before it) join the reader's step, and the race is reported from it."""
    options = {"strategy": "pct", "schedules": 1, "seed": 0, "sample_memory": False}
    points = explore(programs.read_before_join, False, monkeypatch, **options)
    cut = explore(programs.read_before_join, True, monkeypatch, **options)
    assert cut.ok and points.ok, cut.failure or points.failure  # the read came after the write
    assert cut.max_steps_seen < points.max_steps_seen, (cut.max_steps_seen, points.max_steps_seen)
    assert [race.obj for race in cut.data_races] == ["P1.dict#1['v']"], cut.data_races
    race = cut.data_races[0]  # the writer's write, and the read that joined the child's first thread's step
    assert {race.first.thread, race.second.thread} == {"T1 (P1.T0)", "T2 (P1.T1)"}, race
    assert (race.first.op, race.second.op) == ("write", "read"), race
    lines = {race.first.location.rsplit(":", 1)[1], race.second.location.rsplit(":", 1)[1]}
    assert lines == {str(at) for at in programs.unjoined_lines()}, race


def test_a_shared_mapping_stays_a_point(monkeypatch):
    """A real ``mmap`` that another process maps too: the lone child's writes to it stay points, so the parent's
    read between two of them is found (with every access of a lone thread cut, that schedule does not exist)."""
    result = explore(programs.torn_mapping, True, monkeypatch, strategy="pct", schedules=50)
    assert result.failure is not None and "half-done write" in result.failure.message, result
    monkeypatch.setattr(child_memory, "SHARED_PREFIXES", ())
    assert explore(programs.torn_mapping, True, monkeypatch, strategy="pct", schedules=50).ok
