"""What every live display shares: how often it may redraw, and how exploration so far reads in a few words.

``racecheck run`` draws a rich progress bar, the pytest plugin one line per explored test; both redraw through a
:class:`Throttle` (wall-clock, display only: nothing explored depends on it) and count with the same words.
"""

from __future__ import annotations

import time

from racecheck.report.words import count

__racecheck_engine__ = True

REFRESH_S = 0.25  # redraw at most four times a second


class Throttle:
    """Says when a display may redraw (``due``) and how fast schedules have gone since it started (``rate``)."""

    def __init__(self, every: float = REFRESH_S) -> None:
        self.every = every
        self.started = time.monotonic()
        self.drawn = float("-inf")

    def due(self, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self.drawn < self.every:
            return False
        self.drawn = now
        return True

    def rate(self, schedules: int) -> float:
        return schedules / max(time.monotonic() - self.started, 1e-9)


def coverage_words(schedules: int, requested: int, interleavings: int, rate: float, failures: int) -> str:
    """``1200/20000 schedules, 340 interleavings, 1100/s, 0 failures found``."""
    return (f"{schedules}/{count(requested, 'schedule')}, {count(interleavings, 'interleaving')}, {rate:.0f}/s, "
            f"{count(failures, 'failure')} found")
