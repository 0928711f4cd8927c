"""What one CLI exploration produced, as plain data: the common input of the console output, every report file
and the gate.

A *cell* is one scenario x target x semantics explored with one strategy and seed. Everything here is built from
JSON-safe values (str, int, float, lists, dicts) because results travel between processes and machines (``--jobs``,
``--tx``) and end up in ``results.json`` as they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__racecheck_engine__ = True


@dataclass
class FailureRecord:
    """A failing schedule, shrunk. ``events`` are the trace events as ``[step, tid, op, loc, switch]`` lists."""

    kind: str
    message: str
    schedule_index: int  # global index in the cell's exploration, the same for every --jobs
    preemptions: int
    steps: int
    trace: str
    engine_token: str
    token: str = ""  # the CLI token (racecheck replay TOKEN), filled in by the runner
    thread: str | None = None
    events: list[list[Any]] = field(default_factory=list)
    race: list[list[Any]] | None = None  # the racing pair of events, when the engine names it
    race_text: str = ""  # the engine's one-line description of that pair
    cleanup: list[dict] = field(default_factory=list)  # left behind by threads that could not be unwound, removed
    # False: it also failed under every schedule the not-a-race check tried (the order does not decide it); None:
    # not checked (a replay)
    depends_on_schedule: bool | None = None
    occurrences: int = 1  # failing schedules explored that were this same failure (over every chunk)
    signature: list[str] = field(default_factory=list)  # what groups failures: kind, exception type, where raised
    race_key: str = ""  # the racing pair's operations and places, comparable across chunks ("" when not named)
    incomplete: str = ""  # racecheck's own machinery failed after finding it: which step stopped, and why
    undecided: str = ""  # why the not-a-race check could not decide (an uncontrolled process ran beside it)
    notes: list[str] = field(default_factory=list)  # what the report left undone and why (shrink cut short, no pair)
    lanes: dict[str, str] = field(default_factory=dict)  # a child process's threads: {"T2": "P1.T0"} (none: {})

    @property
    def not_a_race(self) -> bool:
        return self.depends_on_schedule is False

    @property
    def hang(self) -> bool:
        """A wait past the hang bound on something racecheck does not control: a hang, never a race."""
        return self.kind == "uncontrolled-blocking"

    def same_failure(self, other: FailureRecord) -> bool:
        """Whether ``other`` is another occurrence of this failure, as the engine groups them: the same signature,
        and the same racing pair when both name one."""
        if self.signature != other.signature:
            return False
        return not self.race_key or not other.race_key or self.race_key == other.race_key

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FailureRecord:
        return cls(**data)


@dataclass
class CellResult:
    scenario: str
    target: str
    fs: str
    strategy: str
    seed: int
    requested: int  # schedules asked for
    schedules: int = 0  # schedules explored (a prefix of the requested ones)
    executions: int = 0  # schedules plus shrinking replays: the work actually done
    elapsed: float = 0.0  # seconds of exploration, summed over workers (wall-clock, for throughput only)
    exhausted: bool = False  # every schedule of the space was run (dfs: within its preemption bound)
    exhausted_note: str = ""  # "exhausted: all N distinct schedules explored" when exhausted
    interleavings: int = 0  # distinct interleavings explored (over every chunk of the cell)
    distinct: int = 0  # distinct schedules explored (over every chunk of the cell)
    budget_stopped: bool = False  # --time-budget ran out before all requested schedules
    failure: FailureRecord | None = None  # the first of ``failures`` (the lowest schedule index)
    oracle: str = ""
    failures: list[FailureRecord] = field(default_factory=list)  # every distinct failure, first found first
    max_failures: int = 1  # distinct failures asked for (--max-failures)
    # unordered conflicting accesses, each once over every chunk (``DataRace.to_dict()`` each), and what the
    # verdict covered (``Scope.to_dict()``; None from a worker that does not say)
    data_races: list[dict] = field(default_factory=list)
    coverage: dict | None = None

    def __post_init__(self) -> None:
        if self.failure is not None and not self.failures:
            self.failures = [self.failure]
        elif self.failures and self.failure is None:
            self.failure = self.failures[0]

    def set_failures(self, failures: list[FailureRecord]) -> None:
        self.failures = list(failures)
        self.failure = self.failures[0] if self.failures else None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.target, self.fs)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def races(self) -> list[FailureRecord]:
        """The failures whose order matters (not those that fail under every schedule tried, nor hangs)."""
        return [f for f in self.failures if not f.not_a_race and not f.hang]

    @property
    def verdict(self) -> str:
        """``race`` (some failure depends on the schedule), ``hang`` (no race, but a thread waited past the hang
        bound on something racecheck does not control), ``not-a-race`` (every failure happened under every schedule
        tried) or ``clean``."""
        if not self.failures:
            return "clean"
        if self.races:
            return "race"
        return "hang" if any(f.hang for f in self.failures) else "not-a-race"

    @property
    def schedules_per_second(self) -> float:
        return self.schedules / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def executions_per_second(self) -> float:
        return self.executions / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def label(self) -> str:
        return f"{self.scenario} [{self.fs}] on {self.target}"
