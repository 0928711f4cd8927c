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
