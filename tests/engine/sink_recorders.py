"""Sinks that record what a run tells them (``tests/engine/test_sinks.py``). A sink that takes steps is called at
the run's decisions, inside its controlled threads, as a chooser is: engine code, never watched itself."""

from racecheck.runtime.sinks import Sink

__racecheck_engine__ = True


class Recorder(Sink):
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.view = None
        self.seen: list[int] = []  # how long the run's trace was as each step came

    def begin(self, view):
        self.calls.append(("begin", view))
        self.view = view

    def step(self, step):
        self.calls.append(("step", step))
        self.seen.append(len(self.view.trace))

    def end(self, run_end):
        self.calls.append(("end", run_end))


class EndOnly(Sink):
    def __init__(self) -> None:
        self.ends = []

    def end(self, run_end):
        self.ends.append(run_end)


class EventReader(Sink):
    """Reads the run's events as they become final: what it was shown each time."""

    def __init__(self) -> None:
        self.shown: list[tuple] = []
        self.ends = []

    def events(self, trace):
        self.shown.append(tuple(trace))

    def end(self, run_end):
        self.ends.append(run_end)
