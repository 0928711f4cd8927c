"""`--report DIR`: results.json (versioned schema), junit.xml (one testcase per cell, failures carry the token),
index.html (summary + swimlanes, self-contained), all written atomically."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from cli_helpers import invoke, one_error_line
from racecheck.report import atomic, html
from racecheck.report.model import CellResult, FailureRecord


def test_report_directory_holds_three_consistent_files(stub, tmp_path):
    out = invoke("run", "lost-update", "open-remove", "--fs", "posix", "--schedules", "40",
                 "--report", str(tmp_path / "rep"), "-q")
    assert out.exit_code == 1, out.output
    files = sorted(os.listdir(tmp_path / "rep"))
    assert files == ["index.html", "junit.xml", "results.json"]  # and no temp file left behind

    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert doc["schema"] == "racecheck-results/2"
    assert set(doc["versions"]) >= {"racecheck", "python", "lightning"}
    cells = {(c["scenario"], c["semantics"]): c for c in doc["cells"]}
    race = cells[("lost-update", "posix")]
    assert race["verdict"] == "race" and race["strategy"] == "pct" and race["seed"] == 0
    assert race["failures"][0]["token"].startswith("rcc1.lost-update.posix.")
    assert race["failures"][0]["token"] in out.stdout
    assert race["schedules_per_s"] > 0 and race["schedules"] == race["failures"][0]["schedule_index"] + 1
    assert cells[("open-remove", "posix")]["verdict"] == "clean"
    assert doc["summary"] == {"cells": 2, "races": 1, "not_a_race": 0, "hangs": 0, "failures": 1,
                              "schedules": sum(c["schedules"] for c in doc["cells"]),
                              "interleavings": sum(c["interleavings"] for c in doc["cells"]),
                              "exhausted": sum(c["exhausted"] for c in doc["cells"]),
                              "data_races": sum(1 for c in doc["cells"] for r in c["data_races"] if not r["benign"])}
    assert all(c["coverage"]["text"].startswith("covered: ") for c in doc["cells"])
    assert all(1 <= c["interleavings"] <= c["distinct_schedules"] <= c["schedules"] for c in doc["cells"])

    suite = ET.parse(tmp_path / "rep" / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failing = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert len(failing) == 1 and "lost-update[posix]" in failing[0].get("name")
    assert race["failures"][0]["token"] in failing[0].find("failure").get("message")

    page = (tmp_path / "rep" / "index.html").read_text()
    assert 'class="trace"' in page and "racecheck replay rcc1.lost-update.posix." in page
    # the engine names the racing pair: it is in the JSON and highlighted in the page
    assert race["failures"][0]["race"] and race["failures"][0]["race_text"].startswith("racing pair on ")
    assert len(re.findall(r'class="op[^"]* race"', page)) == 2
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # self-contained: nothing from the network


def _failure(race=None) -> CellResult:
    events = [[0, 0, "begin", "t.py:1", ""], [1, 0, "start T1", "t.py:2", ""], [2, 1, "begin", "t.py:5", ""],
              [3, 0, "remove a.ckpt", "t.py:3", "preempt"], [4, 1, "write a.ckpt", "t.py:6", ""]]
    record = FailureRecord("exception", "AssertionError: leaked <a.ckpt>", 3, 1, 5, "trace & <text>", "rc1.x",
                           token="rcc1.x", thread="T0", events=events, race=race)
    return CellResult("s", "m:C", "posix", "pct", 0, 10, 4, 4, 0.5, failure=record)


def test_the_trace_has_one_column_per_thread_and_highlights_and_links_the_racing_pair():
    page = html.render([_failure(race=[[3, 0, "remove a.ckpt", "t.py:3", ""], [4, 1, "write a.ckpt", "t.py:6", ""]])])
    assert page.count('<th class="thread"') == 2 and page.count('<tr id="failure-1-step-') == 5
    cells = re.findall(r'<tr id="(failure-1-step-\d)"( class="preempt")?[^>]*><td class="step">[^<]*</td>(.*?)</tr>',
                       page)
    raced = [anchor for anchor, _, row in cells if 'class="op race"' in row]
    assert raced == ["failure-1-step-3", "failure-1-step-4"]
    assert [anchor for anchor, preempt, _ in cells if preempt] == ["failure-1-step-3"]
    # linked from the summary and from the failure's head
    assert '<a href="#failure-1-pair">racing pair</a>' in page and 'id="failure-1-pair"' in page
    assert '<a href="#failure-1-step-3">T0 remove a.ckpt (step 3)</a>' in page
    assert '<a href="#failure-1-step-4">T1 write a.ckpt (step 4)</a>' in page
    assert "&lt;a.ckpt&gt;" in page and "<a.ckpt>" not in page  # escaped
    plain = html.render([_failure()])
    assert not re.search(r'class="op[^"]* race"', plain) and 'href="#failure-1-pair"' not in plain


def test_data_races_are_listed_linked_and_highlighted_where_their_schedule_is_shown():
    cell = _failure()
    access = {"thread": "T0", "op": "write", "location": "t.py:3", "step": 3}
    other = {"thread": "T1", "op": "read", "location": "t.py:6", "step": 4}
    cell.data_races = [  # results.json's shape; the first was seen in the failing schedule itself
        {"obj": "Cache#1._value", "first": access, "second": other, "schedule": 3, "token": "rc1.x", "benign": False},
        {"obj": "dict#2['k']", "first": other, "second": access, "schedule": 7, "token": "rc1.y", "benign": True},
    ]
    page = html.render([cell])
    assert '<a href="#data-races-1">2 data races</a>' in page and 'id="data-races-1"' in page
    assert 'id="data-race-1-1"' in page and 'id="data-race-1-2"' in page and "(benign)" in page
    assert "data race on Cache#1._value: T0 write @t.py:3 and T1 read @t.py:6" in page
    rows = dict(re.findall(r'<tr id="(failure-1-step-\d)"[^>]*>(.*?)</tr>', page))
    assert [a for a, row in rows.items() if "op data-race" in row] == ["failure-1-step-3", "failure-1-step-4"]
    assert all("data race 2" not in row for row in rows.values())  # another schedule's steps: not this trace
    assert '<a href="#failure-1-step-3">step 3</a>' in page
    assert 'data_races' not in html.render([_failure()]) and "data race 1" not in html.render([_failure()])


def test_atomic_write_leaves_old_content_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    atomic.write_atomic(str(target), "old")

    def broken_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        atomic.write_atomic(str(target), "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["results.json"]  # the temp file is gone


def test_report_path_that_is_a_file_is_refused_before_any_work(stub, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = invoke("run", "lost-update", "--report", str(blocker))
    assert out.exit_code == 2 and "is not a directory" in one_error_line(out.stderr)
    assert blocker.read_text() == "x"


def test_bad_input_writes_no_report(stub, tmp_path):
    out = invoke("run", "lost-update", "--target", "no_such_module_xyz:X", "--report", str(tmp_path / "rep"))
    assert out.exit_code == 2
    assert not (tmp_path / "rep").exists() or os.listdir(tmp_path / "rep") == []
