"""The HTML report's swimlanes name a child's threads by process (``T1 (P1.T0)``), from the note its proxy made
when the thread joined the run, so a reader sees which lane is which process."""

from __future__ import annotations

import programs
import racecheck
from racecheck.frontends.parallel import failure_record
from racecheck.report import html
from racecheck.report.html_trace import lane_names
from racecheck.report.model import CellResult


def test_the_swimlanes_name_the_child_process_of_each_lane():
    failure = racecheck.explore(programs.leak_fork, strategy="pct", schedules=50, seed=0).failure
    assert failure is not None
    record = failure_record(failure)
    names = lane_names(record.events)
    assert names, record.events[:5]
    assert list(names.values()) == [f"T{tid} (P1.T0)" for tid in names], names  # one child, one thread
    page = html.render([CellResult("leak", "programs:leak_fork", "posix", "pct", 0, 50, 1, 1, 0.1, failure=record)])
    tid = next(iter(names))
    assert f'data-thread="T{tid}" style="--lane:' in page and f">T{tid} (P1.T0)</th>" in page
    assert ">T0</th>" in page  # the test's own thread keeps its plain name


def test_lanes_without_processes_keep_their_plain_names():
    events = [[0, 0, "begin", "t.py:1", ""], [1, 0, "start T1", "t.py:2", ""], [2, 1, "begin", "t.py:5", ""]]
    assert lane_names(events) == {}
