"""The interleaving key as a sink of the run (``racecheck.runtime.sinks``): what a run's identity is computed from
(``racecheck.search.interleavings``) comes through the sink protocol, the way the data-race finder's events do,
not from fields of the ``Run`` read after it ended.

It listens at the end only (``Sink.end``), by design rather than for want of a seam. The key is a function of the
whole run: each object's access order over every step, or for a run that an exception in one thread stopped, over
that thread's causal past only, which is known only once the run has ended. A sink that listens as the run goes
(``step`` or ``events``) costs a Python call at every decision of every run, and the run builds its steps for it
(about 7% CPU on bench_engine's no-op workload, docs/architecture.md "Sinks"), while the key gains nothing from
being fed early: it is computed from the events at the end by C-level iteration and, for a trace of a shape met
before, one dict lookup. Nor is the key made at ``end``: most runs of a session are never counted (shrinking, the
racing pair, replays), so ``end`` keeps what the key reads (the events, and the thread whose exception ended the
run, both from ``RunEnd``) and ``Coverage`` keys the runs it counts, in batches (``Coverage.settle``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from racecheck.runtime.sinks import Sink
from racecheck.runtime.steps import Outcome, RunEnd
from racecheck.search.dependency import causal_past

if TYPE_CHECKING:
    from racecheck.runtime.scheduler import Run

__racecheck_engine__ = True


class InterleavingSink(Sink):
    """What one run's interleaving key is computed from, once the run has ended (``interleaving``)."""

    __slots__ = ("trace", "failed")

    def __init__(self) -> None:
        self.trace: Sequence[Any] = ()
        self.failed: int | None = None  # the thread whose exception stopped the run (None: it was not stopped so)

    def begin(self, view: Any) -> None:
        self.trace, self.failed = (), None

    def end(self, run_end: RunEnd) -> None:
        self.trace = run_end.trace
        self.failed = run_end.failed if run_end.outcome is Outcome.EXCEPTION else None

    def interleaving(self) -> Sequence[Any]:
        """The events the run's interleaving is made of: all of them, or for a run stopped by an exception in one
        thread, those that happen before it (``dependency.causal_past``): the other threads stopped wherever they
        were, and two equivalent runs agree on that part only."""
        if self.failed is not None:
            return causal_past(self.trace, self.failed)
        return self.trace


def interleaving_of(run: Run) -> Sequence[Any]:
    """The events ``run``'s interleaving key is computed from, as its ``InterleavingSink`` was told them; every run a
    session makes has one (``Session._sinks``): a run without raises ``LookupError`` rather than share a key."""
    for sink in run.sinks:
        if type(sink) is InterleavingSink:
            return sink.interleaving()
    raise LookupError("the run has no InterleavingSink: it was not made by a session")
