"""What becomes of a failing schedule: shrunk, given its racing pair and token, and kept or counted.

The searches themselves are pure logic over callbacks (``shrink.shrink``, ``shrink.fewest_preemptions``,
``race.find_race``); here they run over real runs of a ``Session``. ``collect`` is what the schedule loop and the
failure database's replay call for every failing run.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from racecheck.control.processes.link import thread_labels
from racecheck.runtime.chooser import Chooser
from racecheck.runtime.scheduler import VALUE_PICK, Run
from racecheck.runtime.trace import TraceEvent
from racecheck.search.not_a_race import depends_on_schedule
from racecheck.search.race import WAITING, Race, find_race, same_race
from racecheck.search.replay import Replayer
from racecheck.search.result import Result, failure_of, outcome_line
from racecheck.search.shrink import Probe, fewest_preemptions, normalize, shrink

if TYPE_CHECKING:
    from racecheck.search.session import Session

__racecheck_engine__ = True


def _fewest_preemptions(session: Session, signature: tuple, found: int, budget: int) -> tuple[Probe | None, int]:
    """The exhaustive pass of the shrinker (``shrink.fewest_preemptions``) over real runs of this session."""

    def execute(chooser: Chooser) -> Probe | None:
        run = session.run_once(chooser)
        if run.failure is not None and run.failure.signature() == signature:
            return Probe(normalize(run.choices), (run.preemptions, run.steps), run)
        return None

    return fewest_preemptions(execute, found, budget)


def shrunk(session: Session, run: Run, result: Result) -> tuple[Run, int]:
    """The simplest run that fails the same way as ``run`` (fewest preemptions, then fewest steps)."""
    budget = session.search.shrink_budget
    start = Probe(normalize(run.choices), (run.preemptions, run.steps), run)
    if budget <= 0:
        return run, 0
    signature = run.failure.signature()  # type: ignore[union-attr]

    def probe(choices: list[int]) -> Probe | None:
        replayer = Replayer(choices)
        candidate = session.run_once(replayer)
        result.leaked_threads.extend(candidate.leaked)
        if candidate.failure is None or candidate.failure.signature() != signature:
            return None
        key = (candidate.preemptions, candidate.steps)
        return Probe(normalize(candidate.choices), key, candidate)

    best, probes = shrink(start, probe, budget=budget)
    if best.key[0] > 0:
        fewer, spent = _fewest_preemptions(session, signature, best.key[0], budget)
        probes += spent
        if fewer is not None:
            best, more = shrink(fewer, probe, budget=budget)
            probes += more
    return best.payload, probes


def racing_pair(session: Session, run: Run, result: Result, origin: tuple[str, int] | None = None) -> Race | None:
    """``race.find_race`` over real runs of this session: swap conflicting pairs of the shrunk schedule. ``origin``:
    the strategy and seed the swapped run's token names (the session's own by default)."""
    budget = session.search.race_budget
    if budget <= 0 or run.failure is None:
        return None
    signature = run.failure.signature()
    values = [c for c, p in zip(run.choices, run.picked, strict=False) if p == VALUE_PICK]

    def execute(chooser: Chooser) -> Run:
        swapped = session.run_once(chooser)
        result.leaked_threads.extend(swapped.leaked)
        return swapped

    strategy, seed = origin or (session.search.strategy, session.search.seed)

    def token_of(other: Run) -> str:
        return session.token(other, strategy, seed, 0)

    def fails_same(other: Run) -> bool:
        return other.failure is not None and other.failure.signature() == signature

    def describe(other: Run) -> str:
        return "passes" if other.failure is None else outcome_line(other)[3:]

    events = list(run.trace)
    if run.failure.kind == "deadlock":
        events += [
            TraceEvent(run.steps + 1, rec.tid, rec.op, rec.loc, WAITING, rec.access, rec.points)
            for rec in run.threads
            if rec.launched and rec.op != "exit"  # torn down since, but still showing what it waited for
        ]
    race, _spent = find_race(events, values, execute, fails_same, describe, budget, token_of)
    return named_threads(race, thread_labels(run)) if race is not None else None


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
    best, probes = shrunk(session, run, result)
    strategy, seed = origin or (cfg.strategy, cfg.seed)
    token = session.token(best, strategy, seed, index)
    failure = failure_of(best, token, index, run, probes)
    failure.signature = signature
    failure.race = racing_pair(session, best, result, (strategy, seed))
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
    elif cfg.race_budget > 0 and judgeable(best):
        failure.depends_on_schedule = schedule_dependence(session, best, result)
    result.failures.append(failure)
    if result.failure is None:
        result.failure = failure
    return len(result.failures) >= cfg.max_failures
