"""Noticing that a schedule did not replay, and saying where, in the user's terms.

A schedule is only the sequence of decisions; if the code under test does something racecheck does not control
(a thread it did not start, real time, unseeded randomness, a process id in a decision), the same decisions lead
somewhere else. Two detectors, one vocabulary (threads, operations, source lines; never choice indexes):

* ``Replayer`` follows a token's choices and checks, at every decision, that the thread the token recorded as
  chosen is the one that runs; the first mismatch becomes a ``ReplayDivergence`` naming the step, the thread and
  operation the token expected, and what ran instead.
* ``compare_runs`` (``check_determinism=True``, Shuttle's idea) runs a schedule twice and compares the two traces
  event by event.

``Recorder`` wraps a strategy's chooser to record which thread each decision picked, so the token can carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.strategies import Chooser

__racecheck_engine__ = True

LIKELY_CAUSE = (
    "the code under test did something racecheck does not control: a thread it did not start, real time, "
    "unseeded randomness, or a process-specific value (or the code changed since the token was recorded)"
)

VALUE = 0  # the recorded "picked" entry of a value decision; thread decisions record tid + 1


class Recorder(Chooser):
    """Delegates every decision to ``inner`` and remembers which thread (or that a value) was picked."""

    def __init__(self, inner: Chooser) -> None:
        self.inner = inner
        self.picked: list[int] = []

    def pick_thread(
        self, enabled: Sequence[int], current_enabled: bool, yielding: bool, current: int | None = None
    ) -> int:
        index = self.inner.pick_thread(enabled, current_enabled, yielding, current)
        self.picked.append(enabled[index] + 1)
        return index

    def pick_value(self, n: int, label: str) -> int:
        value = self.inner.pick_value(n, label)
        self.picked.append(VALUE)
        return value

    def __getattr__(self, name: str) -> Any:  # anything else a strategy's chooser offers
        return getattr(self.inner, name)


class Replayer(Chooser):
    """Feeds recorded choices back (past their end, 0: keep the current thread, no fault) and checks each decision
    against the recorded picks when there are any. ``divergence`` is the first mismatch, as a sentence."""

    def __init__(self, choices: Sequence[int], picked: Sequence[int] | None = None) -> None:
        self.choices = list(choices)
        self.expected = None if picked is None else list(picked)
        self.position = 0
        self.picked: list[int] = []
        self.divergence: str | None = None
        self.run: Any = None  # set by the caller once the Run exists, for the message's context

    def _recorded(self, position: int) -> int:
        return self.choices[position] if position < len(self.choices) else 0

    def pick_thread(
        self, enabled: Sequence[int], current_enabled: bool, yielding: bool, current: int | None = None
    ) -> int:
        position = self.position
        self.position += 1
        index = self._recorded(position)
        if self.divergence is None:
            self._check_thread(position, enabled, index)
        if index >= len(enabled):
            index = 0
        self.picked.append(enabled[index] + 1)
        return index

    def pick_value(self, n: int, label: str) -> int:
        position = self.position
        self.position += 1
        value = self._recorded(position)
        if self.divergence is None:
            expected = self._expected(position)
            if expected is not None and expected != VALUE:
                self._diverge(
                    f"the token expected T{expected - 1} to run next ({self._describe(expected - 1)}), but the run "
                    f"asked for {label!r} instead ({self._running()})"
                )
            elif value >= n:
                self._diverge(f"the token recorded a value for {label!r} that this run does not offer")
        if value >= n:
            value = 0
        self.picked.append(VALUE)
        return value

    def _expected(self, position: int) -> int | None:
        if self.expected is None:
            return None
        if position >= len(self.expected):
            return -1
        return self.expected[position]

    def _check_thread(self, position: int, enabled: Sequence[int], index: int) -> None:
        expected = self._expected(position)
        ran = enabled[index] if index < len(enabled) else enabled[0]
        instead = f"ran instead: T{ran} ({self._describe(ran)})"
        if expected == -1:
            self._diverge(f"the token's schedule had ended, but the run went on: {instead}")
        elif expected == VALUE:
            self._diverge(f"the token expected a value to be drawn here (a fault or data choice); {instead}")
        elif expected is not None:
            tid = expected - 1
            if tid != ran:
                self._diverge(f"the token expected T{tid} to run next ({self._describe(tid)}); {instead}")
        elif index >= len(enabled):
            names = ", ".join(f"T{t}" for t in enabled)
            self._diverge(f"the token chose among more threads than could run here (only {names}); {instead}")

    def _describe(self, tid: int) -> str:
        run = self.run
        if run is None:
            return "state unknown"
        if tid >= len(run.threads):
            return "it was never started in this run"
        rec = run.threads[tid]
        if rec.finished:
            return "it had already finished"
        if not rec.launched:
            return "it was not started yet"
        where = f"'{rec.op}' @{rec.loc}" if rec.loc else f"'{rec.op}'"
        return f"at {where}, {'runnable' if rec.can_run() else 'blocked'}"

    def _running(self) -> str:
        run = self.run
        rec = None if run is None else run.current
        return "no thread running" if rec is None else f"T{rec.tid} at '{rec.op}'"

    def _diverge(self, what: str) -> None:
        step = "?" if self.run is None else self.run.steps
        self.divergence = f"replay diverged from the token at step {step}: {what}. Likely cause: {LIKELY_CAUSE}"


def end_mismatch(run: Any, replayer: Replayer, recorded_decisions: int) -> str:
    """The message when every decision matched but the run made fewer decisions than the token recorded."""
    made = len(replayer.picked)
    if made != recorded_decisions:
        what = f"the run ended after {made} decisions where the token recorded {recorded_decisions}"
    else:
        what = "the same threads ran in the same order, but other threads could run at some decisions than recorded"
    return f"replay diverged from the token at step {run.steps}: {what}. Likely cause: {LIKELY_CAUSE}"


def _event_text(event: Any) -> str:
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
                f"{_event_text(left)}, second run {_event_text(right)}. Likely cause: {LIKELY_CAUSE}"
            )
    if len(a) != len(b):
        longer, name = (a, "first") if len(a) > len(b) else (b, "second")
        extra = longer[min(len(a), len(b))]
        return (
            f"the same schedule ran differently the second time, at step {extra.step}: only the {name} run went on "
            f"with {_event_text(extra)}. Likely cause: {LIKELY_CAUSE}"
        )
    if outcome(first) != outcome(second):
        return (
            f"the same schedule took the same {first.steps} steps twice but ended differently: first "
            f"{outcome(first)[0]}, second {outcome(second)[0]}. Likely cause: {LIKELY_CAUSE}"
        )
    return None
