"""The public entry points: ``explore`` and ``replay``, and what they return (``Result``, ``Failure``).

Each builds its ``Config`` from an optional Config and keyword shortcuts (``racecheck.config.resolve``), then runs the
search (``racecheck.search.exploration``). ``racecheck`` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.config import Config, resolve
from racecheck.search.exploration import run_exploration, run_replay
from racecheck.search.result import Failure, Result

__racecheck_engine__ = True

__all__ = ["Failure", "Result", "explore", "replay"]

# The fake filesystem is an extension like any other: the engine imports it, and registers its extension, only when
# a Config sets fs= (racecheck.runtime.declare_provider), so an exploration without fs= never loads fsspec.
runtime.declare_provider("fs", "racecheck.fakefs")


def explore(fn: Callable[[], Any], config: Config | None = None, **shortcuts: Any) -> Result:
    """Run ``fn`` under up to ``schedules`` interleavings chosen by ``strategy``; stop at the first failure.

    ``config`` is a ``racecheck.Config``; every Config field is also a keyword shortcut that overrides it
    (``explore(fn, strategy="dfs", preemption_bound=1)``); any other keyword is a TypeError naming it.
    strategy: "random" (uniform walk), "pct" (priority change points, ``depth``), or "dfs" (every schedule with at
    most ``preemption_bound`` preemptions, default 2; None or ``math.inf`` for no bound; ``result.exhausted`` says
    the search finished). Every thread, lock, queue, future, executor, sleep and clock call of a controlled thread is
    controlled, in whatever module it is made (docs/control.md); ``exclude``: modules or dotted names kept real;
    ``instrument``: modules to swap names in explicitly besides ``fn``'s own (rarely needed). ``fs``: "posix",
    "windows" or a ``racecheck.fakefs.FakeFS`` for a fresh fake filesystem per schedule. ``check_determinism``: run
    every schedule twice and report a difference as a failure of kind "nondeterminism". The failure comes shrunk,
    with a token.
    """
    return run_exploration(fn, resolve(config, shortcuts, "explore"))


def replay(
    fn: Callable[[], Any], token: str, config: Config | None = None, *, judge: bool = False, **shortcuts: Any
) -> Result:
    """Run exactly the schedule ``token`` describes; the Result carries the same failure and the same trace.

    Options as for ``explore`` (only instrument, exclude, fs, on_crash, max_steps, watchdog and check_determinism
    matter here: the schedule comes from the token). Raises TokenError for a malformed, edited or foreign token and
    ReplayDivergence when the code under test does not follow the schedule (saying where). ``judge=True``: a
    failing replay also gets explore's racing pair and not-a-race check (``failure.race``,
    ``failure.depends_on_schedule``; a few more runs)."""
    return run_replay(fn, token, resolve(config, shortcuts, "replay"), judge)
