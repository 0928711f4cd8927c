"""The live line of the pytest plugin: while a test is explored, its schedules, interleavings, schedules/s and
failures so far, drawn after the test's name (or its dot) on the terminal and erased when it is done.

The line is redrawn in place with backspaces (no cursor codes, so any terminal shows it), at most four times a
second, from the explorer's thread between schedules; pytest's output capture is lifted only while it is written.
pytest's own writer keeps counting the line's width as if nothing had been drawn: the line is written to the
terminal's stream directly and leaves the cursor where it found it. Whether a session draws is decided once
(:func:`enabled`, ``--racecheck-progress``): on a terminal by default, never in an xdist worker.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any

import pytest
from racecheck.frontends.live import Throttle, coverage_words

__racecheck_engine__ = True

MIN_WIDTH = 20  # columns left on the line below which nothing is drawn
_DECIDED = pytest.StashKey[bool]()


def enabled(config: pytest.Config, mode: str) -> bool:
    """Whether this session draws live lines, decided at its first explored test: ``on``, ``off``, or ``auto``:
    pytest writes to a terminal. Never in an xdist worker (its output is not the terminal, and the controller only
    hears of finished tests) nor without pytest's terminal; in auto, not with ``-s`` either (the test's own prints
    would land in the line)."""
    if _DECIDED not in config.stash:
        config.stash[_DECIDED] = _decide(config, mode)
    return config.stash[_DECIDED]


def _decide(config: pytest.Config, mode: str) -> bool:
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if mode == "off" or hasattr(config, "workerinput") or reporter is None:
        return False
    if mode == "on":
        return True
    if config.getoption("capture", "fd") == "no":
        return False
    return bool(getattr(reporter, "isatty", False))


class LiveLine:
    """One explored test's live line; ``__call__`` takes the engine's ``Progress`` snapshots (``progress=``)."""

    def __init__(self, config: pytest.Config, requested: int, chained: Any = None) -> None:
        self.config = config
        self.requested = requested
        self.chained = chained  # a progress= callback the marker gave, still called
        self.throttle = Throttle()
        self.shown = 0  # characters now drawn after the cursor

    def __call__(self, snapshot: Any) -> None:
        if self.chained is not None:
            self.chained(snapshot)
        if not self.throttle.due(force=snapshot.schedules >= self.requested):
            return
        text = "racecheck: " + coverage_words(snapshot.schedules, self.requested, snapshot.interleavings,
                                              self.throttle.rate(snapshot.schedules), snapshot.failures)
        self._draw(text)

    def close(self) -> None:
        """Erase the line: the cursor is back where pytest left it."""
        if self.shown:
            self._draw("")

    def _draw(self, text: str) -> None:
        writer = self.config.get_terminal_writer()
        room = writer.fullwidth - writer.width_of_current_line - 1
        text = text[:room] if room >= MIN_WIDTH else ""
        width = max(len(text), self.shown)
        if not width:
            return
        capman = self.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            stream = sys.stdout
            stream.write(text.ljust(width) + "\b" * width)
            stream.flush()
        self.shown = len(text)

