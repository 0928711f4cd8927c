"""Reports of a CLI exploration: ``results.json``, ``junit.xml`` and ``index.html`` in one directory.

All three are rendered in memory before anything is written, then each file is written atomically, so a report
directory never holds a half-written file (see :mod:`racecheck.report.atomic`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from racecheck.report import html, junit, results
from racecheck.report.atomic import write_atomic, write_files
from racecheck.report.model import CellResult, FailureRecord

__racecheck_engine__ = True

__all__ = ["CellResult", "FailureRecord", "write_atomic", "write_reports"]


def write_reports(
    directory: str,
    cells: Sequence[CellResult],
    command: str,
    run: dict | None = None,
    verdicts: Mapping[tuple[str, str, str], str] | None = None,
    title: str = "racecheck report",
) -> list[str]:
    """Render and write the three report files; ``verdicts`` (gate) maps a cell key to "ok" or a regression."""
    regressions = {key: text for key, text in (verdicts or {}).items() if text != "ok"}
    meta = f"racecheck {results.versions()['racecheck']}, `{command}`."
    files = {
        "results.json": results.render(cells, command, run),
        "junit.xml": junit.render(cells, extra_failures=regressions),
        "index.html": html.render(cells, title=title, meta=meta, verdicts=verdicts),
    }
    return write_files(directory, files)
