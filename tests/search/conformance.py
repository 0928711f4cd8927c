"""The strategy conformance checks: what every strategy promises, as functions of its registry entry.

``test_strategy_conformance.py`` runs them on every entry of ``racecheck.search.registry.ENTRIES`` (as Hypothesis
runs one conformance suite against every ``PrimitiveProvider``), so a strategy added to the registry is checked
without a test naming it; the same functions run on planted entries (a strategy with a bug, registered on the fly),
which is how the suite shows that each check can fail. Each check raises ``ConformanceError`` naming the strategy,
the program and what it broke.

An entry is explored under its own name: for the exploration it stands in for the registered entry of that name
(``standing_in``), so the Config, the coverage layer and the schedule loop read its ``systematic`` and ``defaults``
as they read a registered strategy's.

What an exploration ran is observed, not taken from the engine's own counts: ``observe`` wraps the strategy's
``new_execution`` (remembering the schedule index of every chooser it hands out) and reads every run as it is
detached (``Run.detach``, as ``benchmarks/fingerprint.py`` does). A run made by one of those choosers, bare or
wrapped in the coverage layer's ``Steering``, is a run of the exploration proper; shrinking, the racing pair, the
located rerun of a failure and the not-a-race probes make runs with choosers of their own and are left out. A run
during which code came under memory watch is thrown away and its schedule run again, with a new chooser for the
same index (``Run.stale``, ``session.STALE_RETRIES``): ``observe`` checks that every thrown-away attempt is exactly
that, and takes each index's last run as the schedule the exploration counted.

Run as a script (``python conformance.py replay|digest``, JSON on stdin) it replays tokens or digests explorations
in a fresh process, for the checks that need one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import racecheck
from conformance_programs import BY_NAME as PROGRAMS_BY_NAME
from conformance_programs import Program
from racecheck.errors import RacecheckError
from racecheck.runtime import scheduler
from racecheck.runtime.scheduler import Run
from racecheck.search import registry
from racecheck.search.coverage import Steering, interleaving_key, interleaving_of
from racecheck.search.registry import StrategyEntry
from racecheck.search.result import Result
from racecheck.search.session import STALE_RETRIES

HERE = Path(__file__).resolve().parent
SEED = 5
REFERENCE_CAP = 5_000  # schedules unbounded dfs may run for a reference (the programs need at most a few hundred)
EVERY_FAILURE = 1_000  # max_failures: a racy program is explored on after its failure, so its space can end
REGISTERED = {entry.name: entry for entry in registry.ENTRIES}  # as imported, whatever stands in later


class ConformanceError(AssertionError):
    """A strategy broke one of its promises; the message names the strategy, the program and the promise."""


@contextmanager
def standing_in(entry: StrategyEntry) -> Iterator[None]:
    """``entry`` is the registry's strategy of its name until the block ends (a registered entry stands for
    itself)."""
    previous = registry.BY_NAME[entry.name]
    registry.BY_NAME[entry.name] = entry
    try:
        yield
    finally:
        registry.BY_NAME[entry.name] = previous


@dataclass
class Explored:
    """One exploration as observed: its result, the run of every schedule it counted (index order), and the
    attempts it threw away because code came under memory watch while they ran."""

    entry: StrategyEntry
    program: Program
    options: dict[str, Any]  # given to ``observe`` beyond the program's own
    result: Result
    counted: list[Run]
    thrown: list[Run]

    @property
    def what(self) -> str:
        return f"{self.entry.name} ({self.entry.module}:{self.entry.factory}) on {self.program.name}"

    @property
    def bound(self) -> int | None:
        """The preemption bound the strategy was given; None for one that takes none (its claims are unbounded)."""
        return self.result.config.bound if "preemption_bound" in self.entry.options else None


def observe(entry: StrategyEntry, program: Program, schedules: int, **options: Any) -> Explored:
    """Explore ``program`` with ``entry`` standing in for its name (seed ``SEED``, every failure collected), and
    observe which runs were the exploration's own schedules."""
    handed: dict[int, tuple[int, Any]] = {}  # id(chooser) -> (schedule index, chooser)
    runs: list[tuple[Run, Any]] = []  # every run, with its chooser (``detach`` lets go of it)
    real_build, real_detach = registry.build, scheduler.Run.detach

    def build(name: str, seed: int, **given: Any) -> Any:
        strategy = real_build(name, seed, **given)
        hand_out = strategy.new_execution

        def new_execution(index: int, sampled: bool = False) -> Any:
            chooser = hand_out(index, sampled)
            if chooser is not None:
                handed[id(chooser)] = (index, chooser)  # kept alive with it: the id names no other chooser
            return chooser

        strategy.new_execution = new_execution
        return strategy

    def detach(run: Run) -> None:
        runs.append((run, run.chooser))
        real_detach(run)

    config = {"strategy": entry.name, "schedules": schedules, "seed": SEED, "max_failures": EVERY_FAILURE,
              **program.options, **options}
    registry.build, scheduler.Run.detach = build, detach
    try:
        with standing_in(entry):
            result = racecheck.explore(program.fn, **config)
    finally:
        registry.build, scheduler.Run.detach = real_build, real_detach
    attempts: dict[int, list[Run]] = {}
    for run, chooser in runs:
        chooser = chooser.inner if isinstance(chooser, Steering) else chooser
        mark = handed.get(id(chooser))
        if mark is not None and mark[1] is chooser:
            attempts.setdefault(mark[0], []).append(run)
    explored = Explored(entry, program, options, result, [], [])
    _account(explored, attempts)
    return explored


def _account(explored: Explored, attempts: dict[int, list[Run]]) -> None:
    """Each index's runs: every one but the last thrown away because it was stale (at most ``STALE_RETRIES``; the
    last is counted even if stale once they are spent), and one index per schedule the result counts."""
    result = explored.result
    if sorted(attempts) != list(range(len(attempts))) or len(attempts) != result.schedules - result.replayed:
        raise ConformanceError(f"{explored.what}: the strategy's choosers ran schedules {sorted(attempts)}, the "
                               f"result counts {result.schedules - result.replayed}")
    for index in range(len(attempts)):
        *stale, last = attempts[index]
        fresh = [n for n, run in enumerate(stale) if not run.stale]
        if fresh or len(stale) > STALE_RETRIES or (last.stale and len(stale) < STALE_RETRIES):
            raise ConformanceError(
                f"{explored.what}: schedule {index} was run {len(stale) + 1} times, and not every run but the last "
                f"was thrown away for bringing code under memory watch (attempts {fresh} were not stale)")
        explored.counted.append(last)
        explored.thrown.extend(stale)


# 1. It replays its own tokens ------------------------------------------------------------------------------------


def check_replays_its_tokens(explored: Explored) -> int:
    """Every failure's token, replayed in this process, fails the same way with the same trace, byte for byte.
    Returns how many tokens were replayed."""
    program = explored.program
    for failure in explored.result.failures:
        try:
            again = racecheck.replay(program.fn, failure.token, **program.options)
        except RacecheckError as exc:
            raise ConformanceError(f"{explored.what}: token {failure.token} does not replay: {exc}") from exc
        _same_failure(explored.what, failure.token, (failure.kind, failure.trace),
                      None if again.failure is None else (again.failure.kind, again.failure.trace))
    return len(explored.result.failures)


def _same_failure(what: str, token: str, found: tuple[str, str], replayed: tuple[str, str] | None) -> None:
    if replayed is None:
        raise ConformanceError(f"{what}: token {token} failed with {found[0]} but passes when replayed")
    if replayed != found:
        raise ConformanceError(f"{what}: token {token} failed with {found[0]} and this trace:\n{found[1]}\n"
                               f"replayed, it fails with {replayed[0]} and this one:\n{replayed[1]}")


def check_replays_elsewhere(cases: Sequence[tuple[Explored, int]]) -> None:
    """Failure ``n`` of each exploration, replayed in one fresh process, fails the same way with the same trace."""
    asked = [(explored.program.name, explored.result.failures[n].token) for explored, n in cases]
    for (explored, n), replayed in zip(cases, in_a_fresh_process("replay", asked), strict=True):
        failure = explored.result.failures[n]
        _same_failure(f"{explored.what} (in a fresh process)", failure.token, (failure.kind, failure.trace),
                      None if replayed is None else tuple(replayed))


# 2. It never reruns a schedule where it says it does not ---------------------------------------------------------


def promises_no_rerun(explored: Explored) -> bool:
    """A systematic strategy enumerates its space and never repeats itself; the others are steered away from every
    schedule already run unless ``skip_duplicates=False`` asked for independent samples (``coverage``)."""
    return explored.entry.systematic or explored.result.config.skip_duplicates


def check_never_reruns(explored: Explored) -> None:
    """No two schedules the exploration counted made the same decisions (sampled schedules, which have a tree of
    their own, apart from those watched whole); ``result.distinct`` counts them."""
    if not promises_no_rerun(explored):
        return
    first: dict[tuple[bool, tuple[int, ...]], int] = {}
    for index, run in enumerate(explored.counted):
        key = (run.memory_steps.sampled, tuple(run.choices))
        if key in first:
            raise ConformanceError(f"{explored.what}: schedule {index} reran schedule {first[key]} "
                                   f"(choices {list(run.choices)})")
        first[key] = index
    if explored.result.distinct != len(first):
        raise ConformanceError(f"{explored.what}: result.distinct is {explored.result.distinct}, its schedules "
                               f"made {len(first)} distinct decision sequences")


# 3. It is exhausted only when it is ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """Every schedule of a program as unbounded dfs runs them: (interleaving key, ending, preemptions) each."""

    runs: tuple[tuple[str, tuple, int], ...]

    def within(self, bound: int | None) -> tuple[set[str], set[tuple]]:
        """The interleavings and outcomes of the schedules with at most ``bound`` preemptions (None: all)."""
        kept = [run for run in self.runs if bound is None or run[2] <= bound]
        return {run[0] for run in kept}, {run[1] for run in kept}


def key_of(run: Run) -> str:
    return interleaving_key(interleaving_of(run))


def ending(run: Run) -> tuple:
    """How a run ended, as far as its class of equivalent interleavings decides it: passed or crashed, or its
    failure's signature (kind, exception type, where it was raised). Not ``result.outcome``'s thread that noticed
    a deadlock: the order of steps that commute decides that, and dpor runs one order of each class."""
    if run.failure is None:
        return ("crashed" if run.crashed else "passed",)
    return run.failure.signature()


def reference(program: Program, **options: Any) -> Reference:
    """The whole space of ``program`` under ``options`` (those that say how a strategy searches left out):
    unbounded dfs, the registered one whatever stands in for it, run to its end."""
    kept = tuple(sorted((key, value) for key, value in options.items() if key not in _SEARCH_OPTIONS))
    return _reference(program, kept)


_SEARCH_OPTIONS = frozenset({"preemption_bound", "skip_duplicates", "depth", "seed", "schedules", "max_failures"})


@functools.cache
def _reference(program: Program, options: tuple[tuple[str, Any], ...]) -> Reference:
    explored = observe(REGISTERED["dfs"], program, REFERENCE_CAP, **dict(options), preemption_bound=None)
    assert explored.result.exhausted, f"unbounded dfs did not finish {program.name} in {REFERENCE_CAP} schedules"
    return Reference(tuple((key_of(run), ending(run), run.preemptions) for run in explored.counted))


def check_exhausted_only_when_it_is(explored: Explored) -> bool:
    """``result.interleavings`` counts the interleavings of the schedules run, and when the exploration says it
    is exhausted they are every interleaving of the space (within the strategy's bound, if it took one), reached
    with every outcome the space has, and its failures are every failure the space has. Returns ``exhausted``."""
    result, what = explored.result, explored.what
    keys = {key_of(run) for run in explored.counted}
    if result.interleavings != len(keys):
        raise ConformanceError(f"{what}: result.interleavings is {result.interleavings}, its schedules show "
                               f"{len(keys)}")
    if not result.exhausted:
        return False
    whole, outcomes = reference(explored.program, **explored.options).within(explored.bound)
    within = "" if explored.bound is None else f" with at most {explored.bound} preemptions"
    if keys != whole:
        raise ConformanceError(
            f"{what}: exhausted after {result.schedules} schedules with {len(keys)} interleavings, but the space "
            f"has {len(whole)}{within} ({len(whole - keys)} never reached)")
    reached = {ending(run) for run in explored.counted}
    if reached != outcomes:
        raise ConformanceError(f"{what}: exhausted, reaching outcomes {sorted(map(str, reached))}; the space{within}"
                               f" has {sorted(map(str, outcomes))}")
    failing = {found for found in outcomes if len(found) > 1}  # the signatures
    if {failure.signature for failure in result.failures} != failing:
        raise ConformanceError(f"{what}: exhausted, reporting failures "
                               f"{sorted(str(f.signature) for f in result.failures)}; the space has {sorted(failing)}")
    return True


# 4. It explores the same schedules under another PYTHONHASHSEED --------------------------------------------------


def digest(entry: StrategyEntry, programs: Sequence[Program], schedules: int) -> str:
    """One digest of everything ``entry`` ran on ``programs``: every attempt's decisions, in order, and each
    exploration's result line (schedules, interleavings, exhausted, the first failure's token)."""
    hashed = hashlib.sha256()
    for program in programs:
        explored = observe(entry, program, schedules)
        result = explored.result
        hashed.update(repr((
            program.name, [tuple(run.choices) for run in explored.counted], [tuple(run.choices) for run in
                                                                              explored.thrown],
            result.schedules, result.interleavings, result.exhausted,
            None if result.failure is None else result.failure.token,
        )).encode())
    return hashed.hexdigest()


def digests_under(hash_seed: str, entries: Sequence[StrategyEntry], programs: Sequence[str],
                  schedules: int) -> list[str]:
    """``digest`` of each entry, computed in a fresh process run with ``PYTHONHASHSEED=hash_seed``."""
    asked = {"entries": [asdict(entry) for entry in entries], "programs": list(programs), "schedules": schedules}
    return in_a_fresh_process("digest", asked, hash_seed)


# A fresh process ---------------------------------------------------------------------------------------------------


def in_a_fresh_process(command: str, asked: Any, hash_seed: str | None = None) -> Any:
    """Run ``main`` in a new interpreter (this folder first on its path) and return what it printed."""
    env = dict(os.environ)
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    script = f"import sys; sys.path.insert(0, {str(HERE)!r}); import conformance; conformance.main()"
    done = subprocess.run([sys.executable, "-c", script, command], input=json.dumps(asked), capture_output=True,
                          text=True, timeout=300, env=env)
    if done.returncode != 0:
        raise AssertionError(f"the fresh process failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entry(fields: dict[str, Any]) -> StrategyEntry:
    fields = dict(fields, options=tuple(fields["options"]),
                  defaults=tuple(tuple(default) for default in fields["defaults"]))
    return StrategyEntry(**fields)


def main() -> None:
    """``replay``: [[program, token], ...] -> [[kind, trace] or None, ...]; ``digest``: {entries, programs,
    schedules} -> [digest per entry]."""
    command, asked = sys.argv[1], json.loads(sys.stdin.read())
    out: list[Any] = []
    if command == "replay":
        for name, token in asked:
            program = PROGRAMS_BY_NAME[name]
            again = racecheck.replay(program.fn, token, **program.options)
            out.append(None if again.failure is None else [again.failure.kind, again.failure.trace])
    else:
        programs = [PROGRAMS_BY_NAME[name] for name in asked["programs"]]
        for fields in asked["entries"]:
            out.append(digest(_entry(fields), programs, asked["schedules"]))
    print(json.dumps(out))
