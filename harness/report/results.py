"""``results.json``: the machine-readable record of a CLI exploration (schema in reports/SCHEMA.md).

The schema is versioned (``"schema": "racecheck-results/2"``); a reader must check it. Key order is fixed and
floats are rounded, so two runs with the same outcome differ only in the throughput and timing fields.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from importlib import metadata

from racecheck.report.model import CellResult, FailureRecord

__racecheck_engine__ = True

SCHEMA = "racecheck-results/2"
DISTRIBUTION = "pytest-racecheck"  # what pip installs; the import name and the command are racecheck


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def racecheck_version() -> str | None:
    """The installed racecheck's version, from its distribution's metadata (None when it is not installed)."""
    return _version(DISTRIBUTION)


def versions() -> dict[str, str | None]:
    return {
        "racecheck": racecheck_version(),
        "python": platform.python_version(),
        "lightning": _version("lightning"),
        "torch": _version("torch"),
    }


def failure_dict(f: FailureRecord) -> dict:
    return {
        "kind": f.kind,
        "message": f.message,
        "token": f.token,
        "engine_token": f.engine_token,
        "schedule_index": f.schedule_index,
        "preemptions": f.preemptions,
        "steps": f.steps,
        "thread": f.thread,
        "trace": f.trace,
        "events": f.events,
        "race": f.race,
        "race_text": f.race_text,
        "notes": list(f.notes),
        "lanes": dict(f.lanes),
        "cleanup": f.cleanup,
        "depends_on_schedule": f.depends_on_schedule,
        "occurrences": f.occurrences,
        "signature": f.signature,
        "incomplete": f.incomplete,
        "undecided": f.undecided,
    }


def cell_dict(cell: CellResult) -> dict:
    failures = [failure_dict(f) for f in cell.failures]
    return {
        "scenario": cell.scenario,
        "target": cell.target,
        "semantics": cell.fs,
        "oracle": cell.oracle,
        "strategy": cell.strategy,
        "seed": cell.seed,
        "schedules_requested": cell.requested,
        "schedules": cell.schedules,
        "executions": cell.executions,
        "elapsed_s": round(cell.elapsed, 4),
        "schedules_per_s": round(cell.schedules_per_second, 2),
        "interleavings": cell.interleavings,
        "distinct_schedules": cell.distinct,
        "exhausted": cell.exhausted,
        "exhausted_note": cell.exhausted_note,
        "budget_stopped": cell.budget_stopped,
        "verdict": cell.verdict,
        "max_failures": cell.max_failures,
        "failures": failures,
        "data_races": list(cell.data_races),
        "coverage": cell.coverage,
    }


def render(cells: Sequence[CellResult], command: str, run: dict | None = None) -> str:
    """The whole document; ``run`` adds run-level facts (jobs, time budget, gate verdicts)."""
    document = {
        "schema": SCHEMA,
        "command": command,
        "versions": versions(),
        "run": run or {},
        "summary": {
            "cells": len(cells),
            "races": sum(1 for c in cells if c.verdict == "race"),
            "not_a_race": sum(1 for c in cells if c.verdict == "not-a-race"),
            "hangs": sum(1 for c in cells if c.verdict == "hang"),
            "failures": sum(len(c.failures) for c in cells),
            "schedules": sum(c.schedules for c in cells),
            "interleavings": sum(c.interleavings for c in cells),
            "exhausted": sum(1 for c in cells if c.exhausted),
            "data_races": sum(sum(1 for r in c.data_races if not r.get("benign")) for c in cells),
        },
        "cells": [cell_dict(c) for c in cells],
    }
    return json.dumps(document, indent=2) + "\n"
