"""Replaying a recorded schedule (a token's choices, a shrinking candidate, a run's own decisions) and noticing
where the code under test left it.

``Replayer`` follows recorded choices and checks, at every decision, that the thread the record says was chosen is
the one that runs; the first mismatch becomes ``divergence``: a sentence naming the step, the thread and operation
the record expected, and what ran instead (``racecheck.search.divergence`` has the vocabulary).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.runtime.chooser import Chooser, Decision, RunView
from racecheck.runtime.scheduler import VALUE_PICK
from racecheck.runtime.steps import RunEnd
from racecheck.search.busy_wait import SpinWatch
from racecheck.search.divergence import LIKELY_CAUSE, event_text

__racecheck_engine__ = True


class Replayer(Chooser):
    """Feeds recorded choices back (past their end, 0: keep the current thread, no fault) and, given the recorded
    picks and steps, checks every decision against them. ``divergence`` is the first mismatch, as a sentence.
    What it reads of the run is what ``begin`` hands it (``view``).

    ``hand_over_spins``: past the end, hand over from a busy-waiting thread (``_past_the_end``). Only for runs that
    make new choices there (shrink probes, the warm-up): a token's choices are trimmed of the zeros that end them,
    which the run that recorded it made by keeping its thread, so a token's replay must keep it too."""

    def __init__(
        self, choices: Sequence[int], picked: Sequence[int] | None = None, steps: Sequence[int] | None = None,
        hand_over_spins: bool = False,
    ) -> None:
        self.made = (choices, picked, steps)
        self.hand_over_spins = hand_over_spins
        self.view: RunView | None = None
        self.choices = list(choices)
        self.expected = None if not picked and not steps else list(picked or ())
        self.expected_steps = list(steps) if steps else None
        self.position = 0
        self.divergence: str | None = None
        self.watch = SpinWatch()  # past the choices: how long the current thread has been kept at one step

    def _recorded(self, position: int) -> int:
        return self.choices[position] if position < len(self.choices) else 0

    def begin(self, view: RunView) -> None:
        self.view = view

    def fresh(self) -> Replayer:
        return Replayer(*self.made, hand_over_spins=self.hand_over_spins)

    def pick_thread(self, decision: Decision) -> int:
        enabled = decision.enabled
        position = self.position
        self.position += 1
        if position >= len(self.choices) and self.hand_over_spins:
            return self._past_the_end(decision, position)
        index = self._recorded(position)
        if self.divergence is None and not self._check_step(position):
            self._check_thread(position, enabled, index)
        if index >= len(enabled):
            index = 0
        return index

    def _past_the_end(self, decision: Decision, position: int) -> int:
        """Past the recorded choices the current thread is kept (0), unless it busy-waits (``busy_wait``: the same
        read of memory at ``SPIN`` decisions in a row): then the next thread runs, as after a yield, and a shrink
        probe that let a thread spin ends instead of running to its step cap."""
        index = 1 if self.watch.spins(decision) else 0
        if self.divergence is None and not self._check_step(position):
            self._check_thread(position, decision.enabled, index)
        return index

    def pick_value(self, n: int, label: str) -> int:
        position = self.position
        self.position += 1
        value = self._recorded(position)
        if self.divergence is None and not self._check_step(position):
            expected = self._expected(position)
            if expected is not None and expected > VALUE_PICK:
                self._diverge(
                    f"the token expected T{expected - 1} to run next ({self._describe(expected - 1)}), but "
                    f"{self._running()} asked for a value for {label!r} instead"
                )
            elif expected is not None and expected < 0:
                self._diverge(f"the token's schedule had ended, but {self._running()} asked for a value for {label!r}")
            elif value >= n:
                self._diverge(f"the token recorded a value for {label!r} that this run does not offer")
        if value >= n:
            value = 0
        return value

    def end(self, run_end: RunEnd) -> None:
        """After the run: did it end where the recorded schedule ended?"""
        if self.divergence is not None:
            return
        if self.expected is not None and len(run_end.picked) < len(self.expected):
            missing = self.expected[len(run_end.picked)]
            who = f"T{missing - 1} to run next" if missing > VALUE_PICK else "a value to be drawn"
            self._diverge(f"the run ended, but the token expected {who}", step=run_end.steps)
        elif self.expected_steps and run_end.steps != self.expected_steps[-1]:
            end = self.expected_steps[-1]
            if run_end.steps > end:
                went_on = self._at_step(end + 1, run_end.trace)
                self._diverge(f"the token's schedule ended here, but the run went on: {went_on}", end + 1)
            else:
                self._diverge(f"the run ended, but the token's schedule went on until step {end}", run_end.steps)

    def _expected(self, position: int) -> int | None:
        if self.expected is None:
            return None
        if position >= len(self.expected):
            return -1
        return self.expected[position]

    def _check_step(self, position: int) -> bool:
        """A decision must come at the step the token recorded it; say which thread ran where it did not."""
        if self.expected_steps is None or position >= len(self.expected_steps) - 1:
            return False
        want, now = self.expected_steps[position], self.view.steps if self.view is not None else 0
        if want == now:
            return False
        expected = self._expected(position)
        if expected is not None and expected > VALUE_PICK:
            who = f"T{expected - 1} to run next ({self._describe(expected - 1, now=True)})"
        else:
            who = "a value to be drawn (a fault or data choice)"
        if now > want:
            instead = self._at_step(want, self.view.trace if self.view is not None else ())
            self._diverge(f"the token expected {who}; ran instead: {instead}, the only one that could", want)
        else:
            picked = self.view.picked if self.view is not None else ()
            alone = f"T{picked[-1] - 1}" if picked and picked[-1] > VALUE_PICK else "one thread"
            self._diverge(
                f"the token expected {alone} to run on alone until step {want}, but here other threads could run "
                f"({self._running()})",
                now,
            )
        return True

    def _check_thread(self, position: int, enabled: Sequence[int], index: int) -> None:
        expected = self._expected(position)
        ran = enabled[index] if index < len(enabled) else enabled[0]
        instead = f"ran instead: T{ran} ({self._describe(ran)})"
        if expected == -1:
            self._diverge(f"the token's schedule had ended, but the run went on: {instead}")
        elif expected == VALUE_PICK:
            self._diverge(f"the token expected a value to be drawn here (a fault or data choice); {instead}")
        elif expected is not None:
            tid = expected - 1
            if tid != ran:
                self._diverge(f"the token expected T{tid} to run next ({self._describe(tid)}); {instead}")
        elif index >= len(enabled):
            names = ", ".join(f"T{t}" for t in enabled)
            self._diverge(f"the token chose among more threads than could run here (only {names}); {instead}")

    def _describe(self, tid: int, now: bool = False) -> str:
        view = self.view
        if view is None:
            return "state unknown"
        pending = view.thread(tid)
        if pending is None:
            return "it was never started in this run"
        if pending.state == "finished":
            return "it had already finished"
        if pending.state == "not started":
            return "it was not started yet"
        where = f"'{pending.op}' @{pending.loc}" if pending.loc else f"'{pending.op}'"
        if now:  # detected later than it happened: where the thread is now, not whether it could run then
            return f"now at {where}"
        return f"at {where}, {'runnable' if pending.runnable else 'blocked'}"

    def _running(self) -> str:
        running = None if self.view is None else self.view.running
        return "no thread" if running is None else f"T{running.tid} at '{running.op}'"

    @staticmethod
    def _at_step(step: int, trace: Sequence[Any]) -> str:
        """What the trace shows at ``step`` (thread, operation, source line)."""
        for event in reversed(trace):
            if event.step == step and event.switch != "info":
                return event_text(event)
        return f"the thread running at step {step}"

    def _diverge(self, what: str, step: int | None = None) -> None:
        if step is None:
            step = self.view.steps if self.view is not None else 0
        self.divergence = f"replay diverged from the token at step {step}: {what}. Likely cause: {LIKELY_CAUSE}"
