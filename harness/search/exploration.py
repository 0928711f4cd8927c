"""One exploration, or one replay, of a test function under a resolved Config: the search from end to end.

``run_exploration`` replays the failure database's schedules first, then runs the strategy's schedules
(``schedule_loop``), collects and shrinks failures (``findings``), and saves what failed; ``run_replay`` runs exactly
the schedule a token describes and checks that it did. ``racecheck.api`` builds the Config from keyword shortcuts
and calls these.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from racecheck.control.handoff_counts import blind_spots, handed_over
from racecheck.control.processes.link import processes_in
from racecheck.errors import ForeignTokenError, InternalError, ReplayDivergence, TokenError, UserCallbackError
from racecheck.search.coverage import Coverage
from racecheck.search.data_race_sink import found_races
from racecheck.search.data_races import RaceLog
from racecheck.search.database import FailureDatabase
from racecheck.search.divergence import LIKELY_CAUSE
from racecheck.search.findings import collect, judgeable, racing_pair, schedule_dependence, undecidable
from racecheck.search.registry import make_strategy
from racecheck.search.replay import Replayer
from racecheck.search.result import HANG_KIND, Result, failure_of, render_run
from racecheck.search.salvage import note
from racecheck.search.schedule_loop import Schedules
from racecheck.search.scope import scope_of
from racecheck.search.session import Session, config_key
from racecheck.search.tokens import decode, owner_in, shape_of, short_hash

if TYPE_CHECKING:
    from racecheck.config import Config

__racecheck_engine__ = True


def run_exploration(fn: Callable[[], Any], cfg: Config) -> Result:
    """``racecheck.explore`` once its Config is resolved: up to ``cfg.schedules`` schedules of ``cfg.strategy``
    (the failure database's first), every failure shrunk and given its token and racing pair."""
    parts = cfg.parts()
    search = parts.search
    session = Session(fn, parts)
    strat = make_strategy(search.strategy, search.seed, search.depth, search.bound)
    result = Result(ok=True, schedules=0, strategy=search.strategy, seed=search.seed, config=cfg)
    coverage = Coverage(search)
    database = FailureDatabase(search.database) if search.database is not None else None
    db_key = f"{session.target}|{session.config_key}"
    # Source locations cost a stack walk at every point: computed for every schedule only when asked, or when
    # schedules are compared event by event (check_determinism); otherwise a failing one is run again with them.
    locate_all = search.locations == "always" or search.check_determinism
    races = RaceLog(search)
    with session.controlled():
        warm = session.warm_up()
        try:
            stop = database is not None and replay_database(session, database, db_key, result, coverage, races)
            if not stop and warm is not None and warm.leaked and warm.failure is not None and (
                    warm.failure.kind == HANG_KIND):
                # The default schedule hung before any schedule ran: that is the verdict (schedule #0, its token
                # replays it); every schedule would wait out the bound again and leave one more thread stuck.
                collect(session, warm, 0, result)
                coverage.count(warm, 0, result)
                stop = True
            if not stop:
                Schedules(session, strat, coverage, result, races).run(locate_all)
        except UserCallbackError as exc:  # the user's own callback raised: their exception, as it was
            raise exc.original from None
        except InternalError as exc:  # racecheck's own: a failure already found is still the verdict
            if result.failure is None:
                raise
            result.failure.incomplete = "; ".join(
                filter(None, [result.failure.incomplete, note("exploring further", exc)]))
        result.exhausted = strat.exhausted or coverage.exhausted
        result.no_proof = "" if result.exhausted else strat.no_proof
        unseen = blind_spots(result.exhausted) if parts.control.memory else ""
        if unseen:
            result.exhausted, result.no_proof = False, unseen
        coverage.settle(result)
    result.data_races = races.listed()
    result.races_note = races.note()
    result.coverage = scope_of(parts, result, races.real_locks, session.unwatched(),
                               handed=handed_over() if parts.control.memory else ())
    for failure in result.failures:  # a schedule explored after the check ran, that did not fail this way
        if failure.depends_on_schedule is False and (
            result.passed or any(f.signature != failure.signature for f in result.failures)
        ):
            failure.depends_on_schedule = True
    if database is not None:
        for failure in result.failures:
            database.save(db_key, failure.token)
    if result.failure is not None:
        result.ok = False
        result.trace = result.failure.trace
    return result


def replay_database(
    session: Session, database: FailureDatabase, key: str, result: Result, coverage: Coverage, races: RaceLog
) -> bool:
    """Run the schedules that failed before, first; a kept token that no longer fails (or no longer fits the
    test) is dropped. True when they alone found ``max_failures`` distinct failures."""
    for text in database.fetch(key):
        try:
            parsed = decode(text)
        except TokenError:
            database.delete(key, text)
            continue
        if parsed.target != short_hash(session.target) or parsed.config != short_hash(session.config_key):
            continue  # another test or configuration sharing the key digest: leave it alone
        try:
            session.watch_modules(parsed.modules)
        except TokenError:  # it watched a module this checkout no longer has
            database.delete(key, text)
            continue
        run, replayer = session.played(Replayer(parsed.choices, parsed.picked, parsed.steps))
        result.replayed += 1
        result.leaked_threads.extend(run.leaked)
        if run.failure is None or replayer.divergence is not None:
            database.delete(key, text)
            coverage.count(run, -1, result)
            continue
        races.add(run, found_races(run), parsed.index, lambda text=text: text)
        stop = collect(session, run, parsed.index, result, (parsed.strategy, parsed.seed))
        coverage.count(run, -1, result)
        if stop:
            return True
    return False


def run_replay(fn: Callable[[], Any], token: str, cfg: Config, judge: bool = False) -> Result:
    """``racecheck.replay`` once its Config is resolved: exactly the schedule ``token`` describes, checked to have
    followed it (TokenError for a token of another test or configuration, ReplayDivergence where it did not).
    ``judge``: a failing replay also gets the not-a-race check (``failure.depends_on_schedule``), as explore's do.
    A failing replay names its racing pair (``failure.race``, up to ``race_budget`` more runs), as explore does."""
    parsed = decode(token)
    session = Session(fn, cfg.parts())
    if parsed.target != short_hash(session.target):
        owner = owner_in(parsed.target, [sys.modules.get(getattr(fn, "__module__", None) or "")])
        named = f" ({owner})" if owner else ""
        raise ForeignTokenError(f"token was recorded for another test function{named}, not {session.target}",
                                session.target, owner)
    if parsed.config != short_hash(session.config_key):
        # The token says whether it watched memory and whether a data race failed it: a token of ``memory=False``
        # replays without memory, one of ``data_races="fail"`` fails on its data race again, with no option to
        # repeat (the schedule comes from the token).
        for flipped in _flipped(cfg):
            if parsed.config == short_hash(config_key(flipped.parts())):
                session, cfg = Session(fn, flipped.parts()), flipped
                break
        else:
            raise TokenError(
                f"token was recorded with another configuration ({session.config_key!r} does not match)")
    with session.controlled():
        session.warm_up()
        session.watch_modules(parsed.modules)
        run, replayer = session.played(Replayer(parsed.choices, parsed.picked, parsed.steps))
        divergence = replayer.divergence
        if divergence is None and shape_of(run.arities) != parsed.shape:
            divergence = (
                f"replay diverged from the token: the same threads ran at the same steps, but other threads could "
                f"run at some decisions than when it was recorded. Likely cause: {LIKELY_CAUSE}"
            )
        if divergence is None and cfg.check_determinism:
            divergence = session.check_determinism(run)
        depends = race = None
        if divergence is None and run.failure is not None and not run.leaked:
            # the token's schedule is the shrunk one explore named its pair from: the same pair again
            race = racing_pair(session, run, Result(ok=False, schedules=0), (parsed.strategy, parsed.seed))
        undecided = undecidable(run) if run.failure is not None else ""
        if divergence is None and judge and judgeable(run) and not undecided:  # judged as explore judges its failures
            depends = True if race is not None else schedule_dependence(session, run, Result(ok=False, schedules=0))
    if divergence is not None:
        raise ReplayDivergence(divergence)
    result = Result(ok=run.failure is None, schedules=1, strategy="replay", seed=parsed.seed, config=cfg,
                    interleavings=1, distinct=1)
    result.max_steps_seen = run.steps
    result.crashes = int(run.crashed)
    result.leaked_threads = list(run.leaked)
    result.processes = processes_in(run)
    if run.failure is not None:
        result.failure = failure_of(run, parsed.encode(), parsed.index, run, 0)
        result.failure.signature = run.failure.signature()
        result.failure.depends_on_schedule = depends
        result.failure.undecided = undecided
        result.failure.race = race
        result.failures.append(result.failure)
    result.trace = render_run(run)
    races = RaceLog(session.search)
    races.add(run, found_races(run), parsed.index, lambda: token, located=True)
    result.data_races = races.listed()
    result.coverage = scope_of(session.parts, result, races.real_locks, session.unwatched(), replayed=True)
    return result


def _flipped(cfg: Config) -> list[Config]:
    """The configurations a token may have been recorded under that its own key names: memory watched or not,
    data races failing or not, atomic additions among them or not."""
    races = "report" if cfg.data_races == "fail" else "fail"
    out = []
    for atomic in (cfg.atomic_races, not cfg.atomic_races):
        for memory, data_races in ((cfg.memory, cfg.data_races), (not cfg.memory, cfg.data_races),
                                   (cfg.memory, races), (not cfg.memory, races)):
            if (atomic, memory, data_races) != (cfg.atomic_races, cfg.memory, cfg.data_races):
                out.append(dataclasses.replace(cfg, memory=memory, data_races=data_races, atomic_races=atomic))
    return out
