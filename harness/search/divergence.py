"""Noticing that a schedule did not replay, and saying where, in the user's terms.

A schedule is only the sequence of decisions; if the code under test does something racecheck does not control
(a thread it did not start, real time, unseeded randomness, a process id in a decision), the same decisions lead
somewhere else. Two detectors, one vocabulary (threads, operations, source lines; never choice indexes):

* ``Replayer`` (``racecheck.search.replay``) follows a token's choices and checks, at every decision, that the
  thread the token recorded as chosen is the one that runs; the first mismatch becomes a ``ReplayDivergence``
  naming the step, the thread and operation the token expected, and what ran instead.
* ``compare_runs`` (``check_determinism=True``, Shuttle's idea) runs a schedule twice and compares the two traces
  event by event.

What a token checks against (which thread each decision picked, and at which step) is recorded by the run itself
(``Run.picked``, ``Run.recorded_steps()``), whatever chooser it has.
"""

from __future__ import annotations

from typing import Any

__racecheck_engine__ = True

LIKELY_CAUSE = (
    "the code under test did something racecheck does not control: a thread it did not start, real time, "
    "unseeded randomness, or a process-specific value (or the code changed since the token was recorded)"
)


def event_text(event: Any) -> str:
    """A trace event in the user's terms: the thread, its operation and its source line."""
    where = f" @{event.loc}" if event.loc else ""
    return f"T{event.tid} '{event.op}'{where}"


def compare_runs(first: Any, second: Any, outcome: Any) -> str | None:
    """None if ``second`` (the same decisions run again) did exactly what ``first`` did, else where it differed.
    ``outcome(run)`` is the comparable end of a run (failure kind, exception type and place; not its message)."""
    a, b = first.trace, second.trace
    for left, right in zip(a, b, strict=False):
        if left != right:
            return (
                f"the same schedule ran differently the second time, at step {left.step}: first run "
                f"{event_text(left)}, second run {event_text(right)}. Likely cause: {LIKELY_CAUSE}"
            )
    if len(a) != len(b):
        longer, name = (a, "first") if len(a) > len(b) else (b, "second")
        extra = longer[min(len(a), len(b))]
        return (
            f"the same schedule ran differently the second time, at step {extra.step}: only the {name} run went on "
            f"with {event_text(extra)}. Likely cause: {LIKELY_CAUSE}"
        )
    if outcome(first) != outcome(second):
        return (
            f"the same schedule took the same {first.steps} steps twice but ended differently: first "
            f"{outcome(first)[0]}, second {outcome(second)[0]}. Likely cause: {LIKELY_CAUSE}"
        )
    return None
