"""What explore() and replay() return: ``Result`` and ``Failure``, and how a run's end reads in them.

``failure_of`` turns a failing run into a ``Failure`` (its token, rendered trace, preemption and step counts);
``outcome`` and ``outcome_line`` say how a run ended, comparably across reruns and in one line of a report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from racecheck.control.processes.link import thread_labels
from racecheck.runtime.exception_text import exception_text
from racecheck.runtime.records import FailureInfo
from racecheck.runtime.scheduler import Run
from racecheck.runtime.trace import TraceEvent, render
from racecheck.search.coverage import exhausted_note
from racecheck.search.data_races import DataRace, race_lines
from racecheck.search.not_a_race import NOT_A_RACE
from racecheck.search.race import Race
from racecheck.search.scope import Scope

if TYPE_CHECKING:
    from racecheck.config import Config

__racecheck_engine__ = True


HANG_KIND = "uncontrolled-blocking"  # the kind of a hang's failure (its exception: UncontrolledBlocking)


@dataclass
class Failure:
    """A failing schedule, shrunk: replay it with ``racecheck.replay(fn, failure.token)``.

    ``kind``: "exception", "deadlock", "uncontrolled-blocking", "step-limit", or "nondeterminism" (with
    ``check_determinism=True``: the same schedule ran differently twice; ``exception`` is a ReplayDivergence)."""

    token: str
    kind: str
    exception: BaseException
    trace: str
    events: list[TraceEvent]
    schedule_index: int
    preemptions: int
    steps: int
    thread: str | None
    original_preemptions: int
    original_steps: int
    shrink_probes: int = 0
    race: Race | None = None  # the two conflicting operations whose order decides this failure, when found
    occurrences: int = 1  # failing schedules explored that were this same failure (with max_failures > 1)
    signature: tuple = ()  # what groups failures: kind, exception type, where raised
    # what racecheck removed after threads it could not unwind: {"kind", "path", "outcome"} each (the message
    # only counts them by kind, so that it reads the same in every replay)
    cleanup: list[dict] = field(default_factory=list)
    # False: the failure also happened under every schedule the not-a-race check tried (``search.not_a_race``), so
    # the order of the threads does not decide it; None: not checked (a replay, unless asked to judge)
    depends_on_schedule: bool | None = None
    # racecheck's own machinery failed after this failure was found (shrinking, the racing pair, the not-a-race
    # check, a later schedule): which step stopped and why (``search.salvage``); the failure stands as found
    incomplete: str = ""
    # why the not-a-race check could not decide (an uncontrolled process ran beside the failure: never "not a race")
    undecided: str = ""
    # what the report left undone and why: shrinking cut short, the racing pair left unnamed or decided by no single
    # pair (``search.post_budget``, ``search.race``), one line each
    notes: list[str] = field(default_factory=list)
    # the threads of child processes by thread id: {2: "P1.T0"} (empty without children): what a report names each
    # lane, from the run's registry rather than from the trace's words
    lanes: dict[int, str] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """``Type: text``; a bare ``assert`` shows its statement and place (``runtime.exception_text``)."""
        return exception_text(self.exception)

    @property
    def not_a_race(self) -> bool:
        """The failure happened under every schedule the check tried: a bug, but not a race."""
        return self.depends_on_schedule is False

    @property
    def hang(self) -> bool:
        """A thread waited past the hang bound on something racecheck does not control (a socket, another process,
        a real lock: ``runtime.watchdog.hang_bound``): a hang, never a race."""
        return self.kind == HANG_KIND

    def __str__(self) -> str:
        where = f" in {self.thread}" if self.thread else ""
        race = f"{self.race}\n" if self.race is not None else ""
        found = "a schedule that hangs" if self.hang else "a failing schedule"
        if self.not_a_race:
            race = f"{NOT_A_RACE}\n"
        if self.undecided:
            race += f"{self.undecided}\n"
        if self.incomplete:
            race += f"[{self.incomplete}]\n"
        race += "".join(f"{note}\n" for note in self.notes)
        return race + (
            f"racecheck found {found} (#{self.schedule_index}, {self.kind}{where}): {self.message}\n"
            f"preemptions: {self.preemptions} (before shrinking {self.original_preemptions}), steps: {self.steps}\n"
            f"replay with: racecheck.replay(fn, {self.token!r})\n{self.trace}"
        )


@dataclass
class Result:
    """What explore() and replay() return. ``trace``: the rendered trace of the failing schedule (explore) or of
    the replayed one (replay, failing or not); empty when explore found nothing."""

    ok: bool
    schedules: int
    failure: Failure | None = None
    exhausted: bool = False
    strategy: str = ""
    seed: int = 0
    max_steps_seen: int = 0
    crashes: int = 0
    leaked_threads: list[str] = field(default_factory=list)
    trace: str = ""
    config: Config | None = None
    failures: list[Failure] = field(default_factory=list)  # every distinct failure found, first one first
    interleavings: int = 0  # distinct interleavings explored (by the order of conflicting operations)
    distinct: int = 0  # distinct schedules (exact choice sequences) explored; with ``exhausted``: the whole space
    sampled: int = 0  # schedules run with sampled memory watching (racecheck.control.memory_sampling)
    processes: int = 1  # the most processes one schedule had: the test's own and the children it started
    replayed: int = 0  # schedules replayed first from the failure database (counted in ``schedules`` too)
    passed: int = 0  # explored schedules that passed (a failure they did not have depends on the schedule)
    # conflicting accesses no synchronisation ordered, in any schedule explored (``search.data_races``), each once
    data_races: list[DataRace] = field(default_factory=list)
    races_note: str = ""  # why races some runs showed may be missing from ``data_races`` (``RaceLog.note``)
    coverage: Scope | None = None  # what the verdict covered: the schedule space, what was watched, what escaped
    no_proof: str = ""  # why a search that ran to its end proves nothing (a bounded dpor's), for the verdict

    def raise_on_failure(self) -> None:
        if self.failure is not None:
            raise AssertionError(str(self.failure)) from self.failure.exception

    @property
    def exhausted_note(self) -> str:
        """``exhausted: all N distinct schedules explored`` when the space was run to its end, else ''."""
        if not self.exhausted:
            return ""
        bound = self.config.bound if self.config is not None else None
        return exhausted_note(self.distinct, self.strategy, bound, self.interleavings)

    @property
    def harmful_races(self) -> list[DataRace]:
        """The data races not marked benign."""
        return [race for race in self.data_races if not race.benign]

    def verdict(self) -> str:
        """The first line of ``summary()``: ok (with the exhaustion note) or FAILED (message, token)."""
        if self.failure is None:
            done = f"; {self.exhausted_note}" if self.exhausted else f"; {self.no_proof}" if self.no_proof else ""
            return (
                f"ok: {self.schedules} schedules, {self.interleavings} interleavings ({self.strategy}, seed "
                f"{self.seed}){done}"
            )
        more = f" (and {len(self.failures) - 1} more distinct failures)" if len(self.failures) > 1 else ""
        verdict = f" ({NOT_A_RACE})" if self.failure.not_a_race else ""
        if self.failure.undecided:
            verdict = f" ({self.failure.undecided})"
        stopped = f" [{self.failure.incomplete}]" if self.failure.incomplete else ""
        head = "HANG" if self.failure.hang else "FAILED"
        return (
            f"{head} after {self.schedules} schedules: {self.failure.message}{verdict}; token {self.failure.token}"
            f"{more}{stopped}"
        )

    def races_text(self) -> str:
        """The data races in lines: a count, then one line per race not marked benign ("" when there is none)."""
        return "\n".join(race_lines(self.data_races))

    def summary(self) -> str:
        """The verdict, what it covered (``coverage``), and the data races found, one thing per line."""
        lines = [self.verdict()]
        if self.coverage is not None:
            lines.append(self.coverage.text())
        races = self.races_text()
        if races:
            lines.append(races)
        if self.races_note:
            lines.append(self.races_note)
        return "\n".join(lines)


def outcome(run: Run) -> tuple:
    """How a run ended, comparably across reruns: the rendered kind plus the failure's signature."""
    failure = run.failure
    if failure is None:
        return ("a crash" if run.crashed else "passing", run.crashed)
    return (f"{failure.kind} ({type(failure.exception).__name__})", failure.signature(), failure.tid)


def outcome_line(run: Run) -> str:
    """How a run ended, as the last line of its rendered trace ("-> ok", "-> T1 exception: ValueError: ...")."""
    failure = run.failure
    if failure is None:
        return f"-> crashed: {run.crash_reason}" if run.crashed else "-> ok"
    who = f"T{failure.tid} " if failure.tid is not None else ""
    return f"-> {who}{failure.kind}: {exception_text(failure.exception)}"


def render_run(run: Run) -> str:
    """The trace of ``run`` as a report shows it, ending with its outcome."""
    return render(run.trace, len(run.threads), outcome_line(run))


def failure_of(
    run: Run, token: str, index: int, original: Run, probes: int, info: FailureInfo | None = None
) -> Failure:
    """The ``Failure`` a report shows for ``run`` (the shrunk run; ``original``: the one first found, for the counts
    before shrinking; ``probes``: the replays shrinking spent; ``info``: the failure, if not the run's own)."""
    info = info or run.failure
    assert info is not None
    return Failure(
        token=token,
        kind=info.kind,
        exception=info.exception,
        trace=render_run(run),
        events=list(run.trace),
        schedule_index=index,
        preemptions=run.preemptions,
        steps=run.steps,
        thread=None if info.tid is None else f"T{info.tid}",
        original_preemptions=original.preemptions,
        original_steps=original.steps,
        shrink_probes=probes,
        cleanup=[item.to_dict() for item in run.cleaned],
        lanes=thread_labels(run),
    )
