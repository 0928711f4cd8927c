"""`racecheck gate`: a known-buggy target must still be caught, a fixed one must stay clean, throughput (as a ratio
against the reference workload of the same run) must not drop beyond the tolerance; a bad baseline is exit 2."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from cli_helpers import invoke, one_error_line
from racecheck.report import gate

RACY, LOCKED = "cli_stub_catalogue:RacyCounter", "cli_stub_catalogue:LockedCounter"


def _cell(target, expect, rel=None, **extra):
    return {"scenario": "lost-update", "target": target, "semantics": "real", "strategy": "pct", "seed": 0,
            "schedules": 100, "expect": expect, "relative_throughput": rel, **extra}


def _write(tmp_path, cells, tolerance=0.5):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema": gate.SCHEMA, "tolerance": tolerance, "reference": {"schedules": 50},
                                "cells": cells}))
    return path


def test_gate_passes_on_the_expected_verdicts_and_writes_a_report(stub, tmp_path):
    path = _write(tmp_path, [_cell(RACY, "race", 1e-6), _cell(LOCKED, "clean", 1e-6)])
    out = invoke("gate", "--baseline", str(path), "--report", str(tmp_path / "rep"))
    assert out.exit_code == 0, out.output
    assert "gate: OK (2 cells)" in out.stdout and "reference workload:" in out.stdout
    doc = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert [v["ok"] for v in doc["run"]["gate"]["verdicts"]] == [True, True]
    assert doc["run"]["gate"]["verdicts"][0]["relative_throughput"] > 0


def test_gate_fails_on_each_kind_of_regression(stub, tmp_path):
    path = _write(tmp_path, [
        _cell(RACY, "clean"),              # a "fixed" target that now fails
        _cell(LOCKED, "race"),             # a known-buggy target the harness no longer catches
        {**_cell(LOCKED, "clean", 1e6), "semantics": "posix", "schedules": 30},  # impossibly fast baseline
    ])
    out = invoke("gate", "--baseline", str(path), "--report", str(tmp_path / "rep"))
    assert out.exit_code == 1, out.output
    assert "fixed target now fails" in out.stdout and "racecheck replay rcc1.lost-update.real." in out.stdout
    assert "known-buggy target no longer caught" in out.stdout
    assert "throughput dropped" in out.stdout
    assert "gate: FAILED (3 regressions)" in out.stdout
    suite = ET.parse(tmp_path / "rep" / "junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "3"


def test_gate_update_rewrites_throughputs_only(stub, tmp_path):
    path = _write(tmp_path, [_cell(RACY, "race", 5.0), _cell(LOCKED, "clean", None)], tolerance=0.99)
    out = invoke("gate", "--baseline", str(path), "--update")
    assert "baseline updated" in out.stdout, out.output
    doc = json.loads(path.read_text())
    assert [c["expect"] for c in doc["cells"]] == ["race", "clean"]
    assert all(isinstance(c["relative_throughput"], float) for c in doc["cells"])
    gate.parse(path.read_text())  # still a valid baseline


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read baseline"),
        ("{", "not valid JSON"),
        ("[]", "top level must be an object"),
        ('{"schema": "other"}', "'schema' must be"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 2, "reference": {"schedules": 5}, "cells": []}),
         "'tolerance' must be"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 5}, "cells": []}),
         "'cells' must be a non-empty list"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 5},
                     "cells": [_cell(RACY, "maybe")]}), "'expect' must be"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 5},
                     "cells": [{**_cell(RACY, "race"), "scenario": "nope"}]}), "unknown scenario 'nope'"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 5},
                     "cells": [{**_cell(RACY, "race"), "semantics": "windows"}]}), "does not run under 'windows'"),
        (json.dumps({"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 5},
                     "cells": [_cell("no_such_mod_q:X", "race")]}), "cannot import target module"),
    ],
)
def test_bad_baseline_is_one_line_and_exit_2(stub, tmp_path, content, message):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    out = invoke("gate", "--baseline", str(path), "--report", str(tmp_path / "rep"))
    assert out.exit_code == 2, out.output
    assert message in one_error_line(out.stderr)
    assert not (tmp_path / "rep").exists()  # nothing written for bad input


def test_the_committed_baseline_is_valid_and_names_real_cells():
    pytest.importorskip("lightning")
    from pathlib import Path

    from racecheck import scenarios

    baseline = gate.read(str(Path(__file__).resolve().parents[2] / "reports" / "baseline.json"))
    assert {c.expect for c in baseline.cells} == {"race", "clean"}
    assert any(c.expect_failures for c in baseline.cells)  # the gate compares distinct failures somewhere
    assert any(c.expect_exhausted and c.strategy == "dpor" for c in baseline.cells)  # and keeps a proof a proof
    for cell in baseline.cells:
        assert cell.fs in scenarios.get(cell.scenario).semantics
        assert cell.target in (scenarios.STOCK_TARGET, scenarios.FIXED_TARGET, scenarios.LEGACY_TARGET)
        assert (cell.expect == "race") == (cell.target != scenarios.FIXED_TARGET)
        assert cell.relative_throughput is not None and cell.relative_throughput > 0


TWO = "cli_stub_catalogue:TwoBugCounter"


def test_gate_compares_distinct_failures(stub, tmp_path):
    both = ["AssertionError: lost update", "RuntimeError: another add claimed"]
    path = _write(tmp_path, [_cell(TWO, "race", None, max_failures=3, expect_failures=both)])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 0, out.output
    # both expected failures, and (a bare point conflicting with every step) a second racing pair of one of them
    assert re.search(r"got race \((2|3) distinct failures\)", out.stdout), out.stdout
    # one expected failure only: the other one is new; a third expected one is no longer found
    path = _write(tmp_path, [_cell(TWO, "race", None, max_failures=3,
                                   expect_failures=[both[0], "ValueError: never raised"])])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 1, out.output
    assert "new distinct failure: RuntimeError: another add claimed the counter; replay: racecheck replay" in out.stdout
    assert "expected distinct failure no longer found: 'ValueError: never raised'" in out.stdout


def test_gate_expecting_a_race_fails_on_a_failure_that_is_not_a_race(stub, tmp_path):
    path = _write(tmp_path, [_cell("cli_stub_catalogue:RefusingCounter", "race")])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 1, out.output
    assert "known-buggy target no longer races" in out.stdout and "not a race" in out.stdout


@pytest.mark.parametrize("extra, message", [
    ({"max_failures": 0}, "'max_failures' must be an integer in 1..1000"),
    ({"max_failures": "2"}, "'max_failures' must be an integer"),
    ({"expect_failures": []}, "'expect_failures' must be a non-empty list"),
    ({"expect_failures": ["a", 3]}, "'expect_failures' must be a non-empty list"),
    ({"expect_failures": ["a", "b"], "max_failures": 1}, "'max_failures' must be at least"),
])
def test_bad_distinct_failure_fields_are_one_line(stub, tmp_path, extra, message):
    path = _write(tmp_path, [_cell(RACY, "race", None, **extra)])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 2 and message in one_error_line(out.stderr)


def test_expect_failures_needs_expect_race(stub, tmp_path):
    path = _write(tmp_path, [_cell(LOCKED, "clean", None, expect_failures=["x"])])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 2 and "needs 'expect': 'race'" in one_error_line(out.stderr)


def test_a_proof_cell_fails_the_gate_when_its_space_outgrows_its_schedules(stub, tmp_path):
    """``expect_exhausted``: a dpor (or dfs) cell on the fixed target is a proof; passing on a sample is not enough."""
    proof = {**_cell(LOCKED, "clean", None, expect_exhausted=True), "strategy": "dpor", "schedules": 1000}
    out = invoke("gate", "--baseline", str(_write(tmp_path, [proof])))
    assert out.exit_code == 0, out.output
    assert re.search(r"exhausted: all \d+ class(es)? of equivalent interleavings explored", out.stdout), out.stdout
    out = invoke("gate", "--baseline", str(_write(tmp_path, [{**proof, "schedules": 1}])))
    assert out.exit_code == 1, out.output
    assert "proof no longer complete: 1 schedule ran out before the space did" in out.stdout


@pytest.mark.parametrize("extra, message", [
    ({"expect_exhausted": "yes", "strategy": "dpor"}, "'expect_exhausted' must be true or false"),
    ({"expect_exhausted": True}, "'expect_exhausted' needs a strategy that exhausts its space (dfs, dpor)"),
    ({"expect_exhausted": True, "strategy": "dpor", "expect": "race"}, "'expect_exhausted' needs 'expect': 'clean'"),
])
def test_bad_proof_fields_are_one_line(stub, tmp_path, extra, message):
    path = _write(tmp_path, [{**_cell(LOCKED, "clean", None), **extra}])
    out = invoke("gate", "--baseline", str(path))
    assert out.exit_code == 2 and message in one_error_line(out.stderr), out.output
