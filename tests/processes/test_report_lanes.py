"""The HTML report's swimlanes name a child's threads by process (``T1 (P1.T0)``), from the failure's ``lanes``
(the run's registry of processes, carried through ``FailureRecord`` and ``results.json``), so a reader sees which
lane is which process; never from the trace's words."""

from __future__ import annotations

import json

import programs
import racecheck
from racecheck.frontends.parallel import failure_record
from racecheck.report import html, results
from racecheck.report.html_trace import lane_names
from racecheck.report.model import CellResult, FailureRecord


def _page(record: FailureRecord) -> str:
    return html.render([CellResult("leak", "programs:leak_fork", "posix", "pct", 0, 50, 1, 1, 0.1, failure=record)])


def test_the_swimlanes_name_the_child_process_of_each_lane():
    failure = racecheck.explore(programs.leak_fork, strategy="pct", schedules=50, seed=0).failure
    assert failure is not None
    assert failure.lanes and set(failure.lanes.values()) == {"P1.T0"}, failure.lanes  # one child, one thread
    record = failure_record(failure)
    assert record.lanes == {f"T{tid}": label for tid, label in failure.lanes.items()}
    written = json.loads(results.render([CellResult("leak", "programs:leak_fork", "posix", "pct", 0, 50, 1, 1, 0.1,
                                                    failure=record)], "racecheck run"))
    assert written["cells"][0]["failures"][0]["lanes"] == record.lanes
    assert FailureRecord.from_dict(record.to_dict()).lanes == record.lanes
    names = lane_names(record)
    assert list(names.values()) == [f"T{tid} (P1.T0)" for tid in names], names
    page = _page(record)
    tid = next(iter(names))
    assert f'data-thread="T{tid}" style="--lane:' in page and f">T{tid} (P1.T0)</th>" in page
    assert ">T0</th>" in page  # the test's own thread keeps its plain name


def test_lanes_come_from_the_record_not_from_the_traces_words():
    events = [[0, 0, "begin", "t.py:1", ""], [1, 0, "start T1", "t.py:2", ""], [1, 0, "P7.T3 is T1", "t.py:2", "info"],
              [2, 1, "begin", "t.py:5", ""], [3, 2, "begin", "t.py:6", ""]]
    record = FailureRecord("exception", "AssertionError", 0, 0, 4, "", "tok", events=events, lanes={"T2": "P1.T0"})
    assert lane_names(record) == {2: "T2 (P1.T0)"}  # T1's op text imitates the note; only the record names lanes
    page = _page(record)
    assert ">T2 (P1.T0)</th>" in page and ">T1</th>" in page and "P7.T3)</th>" not in page
    assert lane_names(FailureRecord("exception", "m", 0, 0, 1, "", "tok", events=events[:2])) == {}
