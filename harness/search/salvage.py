"""Keeping a failure already found when racecheck's own machinery fails while working on it.

A failing schedule is found by one run; shrinking it, naming its racing pair, judging whether it is a race and
running it again with source locations are all more runs and more of racecheck's own code. Should any of them fail
(a bug of racecheck's, an ``InternalError`` from a later run), the failure found is still a fact about the code
under test: it is reported as found, with its token, and the note says which step stopped and why, instead of the
exploration ending in racecheck's error with nothing to show. A user's own callback (``UserCallbackError``) and an
interrupt are theirs, and pass through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from racecheck.errors import InternalError, UserCallbackError

__racecheck_engine__ = True

T = TypeVar("T")


def attempt(step: Callable[[], T], what: str, notes: list[str], fallback: T) -> T:
    """``step()``, or ``fallback`` when racecheck's own code fails in it; then ``notes`` gets a line saying that
    ``what`` (e.g. "shrinking") stopped, and racecheck's error in one line."""
    try:
        return step()
    except UserCallbackError:
        raise
    except Exception as exc:  # noqa: BLE001 - racecheck's own failure, reported beside the failure it found
        notes.append(note(what, exc))
        return fallback


def note(what: str, exc: BaseException) -> str:
    """One line: ``what`` stopped on racecheck's own error ``exc`` (its first line, without the traceback)."""
    summary = InternalError.of(exc, what).summary.splitlines()[0] if not isinstance(exc, InternalError) else (
        exc.summary.splitlines()[0] if exc.summary else type(exc).__name__)
    return f"{what} stopped: {summary}; the failure is reported as found"
