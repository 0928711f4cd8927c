"""What consumes a run without choosing: the sink protocol, and the run's steps, built once by the runtime.

A chooser answers the run's decisions (``racecheck.runtime.chooser``); a *sink* only listens. The session hands a
run its sinks as it hands it a chooser (``Run(chooser, config, sinks)``), and the run tells each one:

* ``begin(view)`` once, before the run's first step (the ``RunView`` its chooser reads too);
* ``step(step)`` for every ``Step`` of the run, once each, in the order the steps ran, as soon as it is finished
  (its thread reached its next point: nothing joins it any more). Only a sink that defines ``step`` is fed step by
  step, so a run whose sinks listen only at the end builds no step while it goes;
* ``events(trace)`` for a sink that reads the events steps are made of rather than the steps (defines ``events``):
  called at the same moments as ``step``, it means every event of ``trace`` is final (the ones a step is built from,
  for a consumer that needs what a step merges: the point, line and index of each note and joined access, as the
  data-race finder orders by them). It builds no step: a run whose sinks only read events pays no step either;
* ``end(run_end)`` once the run has ended and been torn down, before its chooser hears of it (``RunEnd``: outcome,
  steps, picks, trace, ``taken`` the run's steps, ``memory`` its memory records). A finding a sink makes there (a
  data race that fails the run) is the session's to act on before the chooser's ``end``.

The run's steps are built here, once per run, whoever reads them (``StepLog``): step by step while a sink takes them,
else on the first read of ``RunEnd.taken``; a reader that holds the first steps already (dpor, its replayed prefix)
reads the rest with ``StepLog.since``, which builds none before them. A note (a release, a notify: an ``info`` event)
joins the step its thread is running: the last step, when it is that thread's. A note of a thread that runs no step (one
unwinding after the run was stopped) joins none: it is no part of the run's interleaving. ``build`` is the same assembly
over any sequence of events (a slice of a trace, a trace with a deadlock's pseudo-events) for the analyses that read
those; ``strays=True`` lets such a note join its thread's last step instead (the racing pair's reading,
``racecheck.search.dependency.steps``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any, overload

from racecheck.runtime.steps import Step

__racecheck_engine__ = True

_new = tuple.__new__
_NUMBER = attrgetter("event.step")  # a step's number in the run: increasing along a run's steps
_TID_SWITCH = attrgetter("tid", "switch")
_NEVER = 1 << 62


class Sink:
    """One consumer of a run's steps: override what it listens to. ``every``: a sink that reads events is told once
    at least this many new events are final (and when the run ends), not at every step: a call per step cost the
    data-race finder, which reads in batches, as much as a quarter of its own work."""

    every = 1

    def begin(self, view: Any) -> None:
        """The run is about to start; ``view`` (a ``RunView``) is what it may read of it until it ends."""

    def step(self, step: Step) -> None:
        """One finished step of the run, in order (only called on sinks that define it)."""

    def events(self, trace: Sequence[Any]) -> None:
        """Every event of ``trace`` so far is final, the run's own list: read, never change it (only called on sinks
        that define it; ``trace`` may be a new list with the same events at the end: ``Run.drop_locations``)."""

    def end(self, run_end: Any) -> None:
        """The run has ended (a ``RunEnd``)."""

    def touched(self) -> Any:
        """Once ended: per object, the (thread, kind) pairs that touched it in the whole run, when this sink read
        every access anyway (the data-race finder's shadow memory), so that a chooser learning who touches what
        (``RunEnd.touched``) reads that instead of walking every access again; None when it did not."""
        return None


def touched_by(sinks: Sequence[Sink]) -> Any:
    """The first of ``sinks``' ``touched`` (None when none read every access)."""
    for sink in sinks:
        if type(sink).touched is not Sink.touched:
            seen = sink.touched()
            if seen is not None:
                return seen
    return None


def takes_steps(sink: Sink) -> bool:
    """Whether ``sink`` listens step by step (defines ``step``)."""
    return type(sink).step is not Sink.step


def reads_events(sink: Sink) -> bool:
    """Whether ``sink`` reads the run's events as they become final (defines ``events``)."""
    return type(sink).events is not Sink.events


def _extend(made: list[Step], counts: dict[int, int], last: dict[int, int] | None, events: Sequence[Any],
            start: int, stop: int) -> None:
    """``events[start:stop]`` as steps onto ``made`` (``counts``: each thread's steps so far; ``last``: each
    thread's last step in ``made``, for notes of threads that run none, or None to leave those out)."""
    for index in range(start, stop):
        event = events[index]
        tid = event.tid
        if event.switch == "info":
            access = event.access
            if not access:
                continue
            if made and made[-1].event.tid == tid:
                at = len(made) - 1
            elif last is not None and tid in last:
                at = last[tid]
            else:
                continue
            step = made[at]
            touched = step.accesses
            more = tuple(one for one in access if one not in touched)
            if more:
                made[at] = _new(Step, (step.event, step.nth, touched + more))
            continue
        nth = counts.get(tid, 0)
        counts[tid] = nth + 1
        if last is not None:
            last[tid] = len(made)
        made.append(_new(Step, (event, nth, tuple(event.access))))


def build(events: Sequence[Any], strays: bool = False) -> list[Step]:
    """The steps of ``events`` (``Step``: the event of its point, its number among its thread's steps counted from
    0, everything it touched, its notes' accesses included, each once). ``strays``: a note of a thread that is not
    running the last step joins that thread's last step (else no step)."""
    made: list[Step] = []
    _extend(made, {}, {} if strays else None, events, 0, len(events))
    return made


def count_steps(counts: dict[int, int], events: Sequence[Any], start: int, stop: int) -> None:
    """Add to ``counts`` each thread's steps among ``events[start:stop]``, at C level (a reader that builds the
    steps after them numbers them as the run does without building these)."""
    for (tid, switch), n in Counter(map(_TID_SWITCH, islice(events, start, stop))).items():
        if switch != "info":
            counts[tid] = counts.get(tid, 0) + n


class StepReader:
    """The steps of ranges of a run's trace as the run goes, numbered as the run's (``Step.nth``), for a chooser
    that reads the steps finished since each decision (``racecheck.runtime.chooser.Decision.steps_finished``).
    Ranges read in order cost each event once: the steps of a range are built, the events before it that no read
    covered only counted. Made on a chooser's first read, so a run whose chooser reads none pays nothing."""

    __slots__ = ("trace", "counts", "cursor")

    def __init__(self, trace: Sequence[Any]) -> None:
        self.trace = trace
        self.counts: dict[int, int] = {}  # each thread's steps before ``cursor``
        self.cursor = 0

    def steps(self, start: int, stop: int) -> list[Step]:
        """The steps of ``trace[start:stop]`` (``start``: a step's event; ``stop``: where a step has finished)."""
        if start != self.cursor:
            if start < self.cursor:  # read out of order: number again from the start
                self.counts, self.cursor = {}, 0
            count_steps(self.counts, self.trace, self.cursor, start)
        out: list[Step] = []
        _extend(out, self.counts, None, self.trace, start, stop)
        self.cursor = stop
        return out


class StepLog(Sequence[Step]):
    """A run's steps, built once from its trace: step by step while sinks take them (``advance``, at each new step
    of the run, when every event before it is final), else all at once on the first read after the run has ended
    (``finish`` says it has). A sequence of ``Step``, read from the trace the run hands out at its end
    (``Run.drop_locations`` may have replaced it: then it is read again from that one)."""

    __slots__ = ("source", "made", "counts", "cursor", "sinks", "steppers", "readers", "fed", "ended", "due")

    def __init__(self, trace: list[Any], steppers: tuple[Sink, ...] = (), readers: tuple[Sink, ...] = ()) -> None:
        self.source = trace
        self.made: list[Step] = []
        self.counts: dict[int, int] = {}
        self.cursor = 0  # the events read so far: every one of them final, so are the steps made of them
        self.steppers = steppers  # the sinks that take steps, fed each one as it is made
        self.readers = readers  # the sinks that read events, told as they become final
        self.sinks = steppers + readers  # every sink fed as the run goes (none: the run builds nothing as it goes)
        self.fed = 0  # the steps the sinks have had
        self.ended = False
        # the trace's length at which the readers are next told (``Sink.every`` events after the last time)
        self.due = min([sink.every for sink in readers]) if readers else _NEVER

    @classmethod
    def begin(cls, trace: list[Any], sinks: tuple[Sink, ...], view: Any) -> StepLog:
        """The log of a run that is about to start, whose trace is ``trace``: each of ``sinks`` begins (``view``),
        and those that take steps are fed them."""
        for sink in sinks:
            sink.begin(view)
        return cls(trace, tuple(sink for sink in sinks if takes_steps(sink)),
                   tuple(sink for sink in sinks if reads_events(sink)))

    def advance(self) -> None:
        """Every event of the trace so far is final (the run is about to add a new step, or has ended): the sinks that
        read events are told (``Sink.every`` events apart, and at the end); for those that take steps, their steps are
        made and fed. The events after the last call begin with a step's event, so no note joins a step made before."""
        trace = self.source
        if len(trace) >= self.due:
            readers = self.readers
            self.due = len(trace) + min([sink.every for sink in readers]) if not self.ended else _NEVER
            for sink in readers:
                sink.events(trace)
        sinks = self.steppers
        if sinks:
            made = self._build()
            for step in made[self.fed:]:
                for sink in sinks:
                    sink.step(step)
            self.fed = len(made)

    def _build(self) -> list[Step]:
        trace = self.source
        _extend(self.made, self.counts, None, trace, self.cursor, len(trace))
        self.cursor = len(trace)
        return self.made

    def finish(self, trace: list[Any]) -> StepLog:
        """The run has ended and ``trace`` is its trace: the sinks get the steps (or events) they have not had; the
        steps no sink took are made when first read. A trace that replaced the one read so far (the same events
        without source lines) is read again from its start; the sinks get only the steps they have not had."""
        if trace is not self.source:
            self.source, self.made, self.counts, self.cursor = trace, [], {}, 0
        self.ended = True
        if self.readers:
            self.due = 0  # told at the end whatever came since
        if self.sinks:
            self.advance()
        return self

    def since(self, start: int) -> list[Step]:
        """The run's steps made of the events from trace index ``start`` on (``start``: a step's event, or the end),
        once the run has ended, for a reader that holds the steps before it already: dpor's analysis holds the
        steps of the prefix a schedule replays (most of its steps), and building them again cost its search about
        6% of the engine's work per schedule. Taken from the log when it has built them (a sink took steps, or the
        whole log was read); otherwise built from ``start`` only, not kept (a later read of the whole log builds
        them again), their ``nth`` counted over the steps before ``start`` by C-level iteration."""
        trace = self.source
        if self.cursor >= start or not self.ended:
            made = self._all()
            if start >= len(trace):
                return []
            return made[bisect_left(made, trace[start].step, key=_NUMBER):]
        counts: dict[int, int] = {}
        count_steps(counts, trace, 0, start)
        out: list[Step] = []
        _extend(out, counts, None, trace, start, len(trace))
        return out

    def _all(self) -> list[Step]:
        if self.ended and self.cursor < len(self.source):
            self._build()
        return self.made

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> Step: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Step]: ...

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __iter__(self) -> Iterator[Step]:
        return iter(self._all())
