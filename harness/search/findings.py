"""What becomes of a failing schedule: shrunk, given its racing pair and token, and kept or counted.

The searches themselves are pure logic over callbacks (``shrink.shrink``, ``shrink.fewest_preemptions``,
``race.find_race``); here they run over real runs of a ``Session``. ``collect`` is what the schedule loop and the
failure database's replay call for every failing run.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from racecheck.control import processes_escape
from racecheck.control.processes.link import thread_labels
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.scheduler import VALUE_PICK, Run
from racecheck.runtime.steps import Outcome
from racecheck.runtime.trace import TraceEvent
from racecheck.search.dependency import steps
from racecheck.search.not_a_race import depends_on_schedule
from racecheck.search.post_budget import FACTOR, WorkBudget, capped, cut_by, unbounded
from racecheck.search.race import WAITING, Race, same_race, search_pair
from racecheck.search.race_candidates import checked_objects
from racecheck.search.replay import Replayer
from racecheck.search.result import Result, failure_of, outcome_line
from racecheck.search.salvage import attempt
from racecheck.search.shrink import Probe, minimal, normalize

if TYPE_CHECKING:
    from racecheck.search.session import Session

__racecheck_engine__ = True


def shrunk(session: Session, run: Run, result: Result, work: WorkBudget | None = None) -> tuple[Run, int]:
    """The simplest run that fails the same way as ``run`` (fewest preemptions, then fewest steps), within ``work``
    (``post_budget``; its ``cut`` says whether it stopped the shrink)."""
    work = work or unbounded()
    budget = session.search.shrink_budget

    def as_probe(candidate: Run) -> Probe:
        return Probe(normalize(candidate.choices), (candidate.preemptions, candidate.steps), candidate)

    start = as_probe(run)
    if budget <= 0:
        return run, 0
    signature = run.failure.signature()  # type: ignore[union-attr]

    def execute(chooser: Chooser) -> Probe | None:  # one run under ``chooser``: a probe if it fails the same way
        with capped(session, work, run):
            candidate = session.run_once(chooser)
        result.leaked_threads.extend(candidate.leaked)
        if candidate.failure is None or candidate.failure.signature() != signature:
            return None
        return as_probe(candidate)

    def probe(choices: list[int]) -> Probe | None:  # a choice sequence replayed (past it: hand over from spinners)
        return execute(Replayer(choices, hand_over_spins=True))

    best, probes = minimal(start, probe, execute, budget, work.more)
    return best.payload, probes


def racing_pair(session: Session, run: Run, result: Result, origin: tuple[str, int] | None = None,
                work: WorkBudget | None = None, notes: list[str] | None = None) -> Race | None:
    """``race.search_pair`` over real runs of this session: swap conflicting pairs of the shrunk schedule, those on
    what the failing check read first. ``origin``: the strategy and seed the swapped run's token names (the
    session's own by default); ``work``: the budget in steps (``post_budget``); ``notes`` gets why no pair was
    named, when the search says."""
    budget = session.search.race_budget
    if budget <= 0 or run.failure is None:
        return None
    work = work or unbounded()
    signature = run.failure.signature()
    values = [c for c, p in zip(run.choices, run.picked, strict=False) if p == VALUE_PICK]

    def execute(chooser: Chooser) -> Run:
        with capped(session, work, run):
            swapped = session.run_once(chooser)
        result.leaked_threads.extend(swapped.leaked)
        return swapped

    strategy, seed = origin or (session.search.strategy, session.search.seed)

    def token_of(other: Run) -> str:
        return session.token(other, strategy, seed, 0)

    limit = session.run_config.max_steps

    def fails_same(other: Run) -> bool:
        return other.failure is not None and other.failure.signature() == signature

    def cut(other: Run) -> bool:  # a swap cut at its cap proves nothing either way: undecided, never evidence
        return cut_by(other, limit)

    def describe(other: Run) -> str:
        return "passes" if other.failure is None else outcome_line(other)[3:]

    run_end = run.ending()  # what the runtime hands of an ended run: its trace, and what each waiting thread waited in
    events = list(run_end.trace)
    if run_end.outcome is Outcome.DEADLOCK:
        events += [TraceEvent(run_end.steps + 1, waiting.tid, waiting.op, waiting.loc, WAITING, waiting.access,
                              waiting.points) for waiting in run_end.waiting]
    checked = checked_objects(steps(run_end.trace), run.failure.tid)
    found = search_pair(events, values, execute, fails_same, describe, budget, token_of, checked, work.more,
                        cut)
    if found.note and notes is not None:
        notes.append(f"{found.note} ({work.words()})" if work.cut else found.note)
    return named_threads(found.race, thread_labels(run)) if found.race is not None else None


def named_threads(race: Race, labels: dict[int, str]) -> Race:
    """The racing pair with each side's process and thread (``P1.T0``) where the run had child processes."""
    if not labels:
        return race
    first = dataclasses.replace(race.first, name=labels.get(race.first.tid, ""))
    second = dataclasses.replace(race.second, name=labels.get(race.second.tid, ""))
    return dataclasses.replace(race, first=first, second=second)


def judgeable(run: Run) -> bool:
    """Whether the not-a-race check may run ``run``'s test again: not after a thread was left stuck in code
    racecheck does not control (every rerun would leave another), nor for a failure that is about reruns."""
    failure = run.failure
    return failure is not None and not run.leaked and failure.kind in ("exception", "deadlock", "step-limit")


def undecidable(run: Run) -> str:
    """Why the not-a-race check cannot decide for ``run`` ("" when it can): a process racecheck does not control
    ran beside it (``control.processes_escape``), in real time, so a failure under every probe schedule may still
    depend on an order no schedule sets."""
    processes = processes_escape.in_run(run)
    if not processes:
        return ""
    return (f"whether it is a race could not be decided: a process racecheck does not control ran at the same time "
            f"({'; '.join(processes)}), and no schedule orders it")


def schedule_dependence(session: Session, run: Run, result: Result) -> bool:
    """Whether the failure of ``run`` depends on the schedule (``not_a_race.depends_on_schedule`` over real runs
    of this session): False when every probe schedule fails the same way."""
    signature = run.failure.signature()  # type: ignore[union-attr]

    def execute(chooser: Chooser) -> Run:
        probe = session.run_once(chooser, locate=False)
        result.leaked_threads.extend(probe.leaked)
        return probe

    def fails_same(other: Run) -> bool:
        return other.failure is not None and other.failure.signature() == signature

    depends, _spent = depends_on_schedule(execute, fails_same)
    return depends


def collect(
    session: Session, run: Run, index: int, result: Result, origin: tuple[str, int] | None = None
) -> bool:
    """A failing schedule: a new distinct failure is shrunk, given its racing pair and token, and kept; another
    instance of a known one is counted. True when exploration should stop (``max_failures`` distinct found)."""
    cfg = session.search
    signature = run.failure.signature()  # type: ignore[union-attr]
    known = [f for f in result.failures if f.signature == signature]
    for failure in known:
        if failure.race is None or same_race(failure.race, run.trace):
            failure.occurrences += 1
            return False
    notes: list[str] = []  # what of racecheck's own machinery failed on this failure (``search.salvage``)
    # A run that left a thread stuck (a hang) is never run again: every rerun would wait out the hang bound and
    # leave one more thread stuck. It is reported as found, with no pair (a hang is not a race).
    again = not run.leaked
    found_in = session.steps_run  # what finding it cost: each phase below may spend a multiple of it
    shrinking = WorkBudget(lambda: session.steps_run, found_in, found_in)
    best, probes = (attempt(lambda: shrunk(session, run, result, shrinking), "shrinking", notes, (run, 0))
                    if again else (run, 0))
    strategy, seed = origin or (cfg.strategy, cfg.seed)
    token = session.token(best, strategy, seed, index)
    failure = failure_of(best, token, index, run, probes)
    failure.signature = signature
    if shrinking.cut:
        failure.notes.append(f"shrinking cut short after {probes} probes ({shrinking.words()})")
    if not notes and again:
        # the two phases together: twice what finding it cost (shrinking at most once), each with the floor
        pairing = WorkBudget(lambda: session.steps_run, found_in, FACTOR * found_in - shrinking.spent)
        failure.race = attempt(lambda: racing_pair(session, best, result, (strategy, seed), pairing, failure.notes),
                               "naming the racing pair", notes, None)
    for other in known:
        if other.race is not None and failure.race is not None and other.race.key() == failure.race.key():
            other.occurrences += 1
            return False
    # A named racing pair already shows that another order makes the failure go away. ``race_budget=0`` asks for
    # no judging replays at all, and a run that left a thread stuck in uncontrolled code is never run again (see
    # ``Session.located``): then the verdict stays unknown.
    if failure.race is not None:
        failure.depends_on_schedule = True
    elif result.passed or any(f.signature != signature for f in result.failures):
        failure.depends_on_schedule = True  # an explored schedule did not fail this way
    elif undecidable(best):
        failure.undecided = undecidable(best)  # never "not a race" beside a process nobody scheduled
    elif cfg.race_budget > 0 and judgeable(best) and not notes:
        failure.depends_on_schedule = attempt(lambda: schedule_dependence(session, best, result),
                                              "the not-a-race check", notes, None)
    failure.incomplete = "; ".join(notes)
    result.failures.append(failure)
    if result.failure is None:
        result.failure = failure
    return bool(notes) or len(result.failures) >= cfg.max_failures  # after racecheck's own error: no more runs
