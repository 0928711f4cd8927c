"""Reading the plugin's report out of a pytester run's output."""

from __future__ import annotations

import re


def section(output: str, title: str = "racecheck: failing schedule") -> str:
    """The text of one report section (between its ---- title ---- line and the next section header)."""
    match = re.search(rf"-+ {re.escape(title)} -+\n(.*?)\n(?:[=_-]{{5,}} |\Z)", output, re.S)
    assert match, output
    return match.group(1)


def token_of(output: str) -> str:
    match = re.search(r"^token: (rc1\.\S+)$", output, re.M)
    assert match, output
    return match.group(1)


def trace_rows(report: str) -> list[str]:
    """The trace table's rows as text, wrapped cells joined back (the renderer wraps long operations)."""
    rows: list[list[str]] = []
    for line in report.splitlines():
        cells = line.split("|")
        if len(cells) < 2 or line.startswith("----") or line.startswith("step"):
            continue
        if cells[0].strip():
            rows.append([cell.strip() for cell in cells[1:]])
        elif rows:
            rows[-1] = [f"{old} {new.strip()}".strip() for old, new in zip(rows[-1], cells[1:], strict=False)]
    return [" | ".join(row) for row in rows]
