"""Exploring scenario cells in one process, in J local processes, or on execnet gateways, with the same answer.

Determinism across worker counts comes from the partitioning, not from the workers
(:mod:`racecheck.frontends.chunks`: fixed chunks of schedules, each with its own seed, handed out in order, the
answer read from them in order), so the reported failures, their tokens and the schedule count are the same for
``--jobs 1`` and ``--jobs 8``. ``time_budget`` is checked only between units: what is explored is always a prefix of
the same unit sequence, and the result says how many schedules that prefix held.

Every unit and every result is plain JSON-safe data, so the same ``execute_unit`` runs in this process, in a
spawned process, or on a remote interpreter reached through execnet (``--tx``).
"""

from __future__ import annotations

import importlib
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from racecheck.errors import InternalError
from racecheck.frontends.chunks import CHUNK, Dispatcher, assemble, plan, wanted  # noqa: F401 - CHUNK: run reports it
from racecheck.report.model import CellResult, FailureRecord

__racecheck_engine__ = True

DEFAULT_CATALOGUE = "racecheck.scenarios"
CATALOGUE_ENV = "RACECHECK_CATALOGUE"


class RunnerError(Exception):
    """A worker could not run a unit (unreachable gateway, racecheck missing there, ...); one line."""


@dataclass(frozen=True)
class Cell:
    """One scenario x target x semantics to explore with one strategy, seed and schedule count."""

    scenario: str
    target: str
    fs: str
    strategy: str
    seed: int
    schedules: int
    instrument: tuple[str, ...] = ()
    catalogue: str | None = None
    options: tuple[tuple[str, Any], ...] = ()  # extra explore() keywords (shrink_budget, preemption_bound, ...)
    oracle: str = ""


def catalogue_name() -> str | None:
    """The catalogue module named by ``RACECHECK_CATALOGUE`` (a plug-in catalogue), or None for the built-in."""
    name = os.environ.get(CATALOGUE_ENV, "").strip()
    return name or None


def load_catalogue(name: str | None) -> Any:
    return importlib.import_module(name or DEFAULT_CATALOGUE)


# ----- one unit, in whichever process runs it ---------------------------------------------------------------------

_prepared_cache: dict[tuple, Any] = {}


def prepare(catalogue: str | None, scenario: str, target: str, fs: str, instrument: Sequence[str]) -> tuple:
    """(Prepared, explore keywords) for a cell; cached per process so a worker builds each cell once."""
    key = (catalogue, scenario, target, fs, tuple(instrument))
    if key not in _prepared_cache:
        scenarios = load_catalogue(catalogue)
        prepared = scenarios.get(scenario).build(scenarios.load_target(target), fs)
        kwargs = dict(prepared.explore_kwargs)
        extra = list(instrument)
        if extra:
            base = kwargs.get("instrument") or ()
            if isinstance(base, (str, type(os))):
                base = (base,)
            kwargs["instrument"] = [*base, *extra]
        _prepared_cache[key] = (prepared, kwargs)
    return _prepared_cache[key]


def _event(event: Any) -> list[Any]:
    switch = getattr(event, "switch", None)
    if switch is None:
        switch = getattr(event, "kind", "")
    return [int(event.step), int(event.tid), str(event.op), str(event.loc), str(switch)]


def _race(failure: Any) -> tuple[list[list[Any]] | None, str]:
    """The racing pair the engine named (``failure.race.first/second``), as events, and its one-line description."""
    race = getattr(failure, "race", None)
    if race is None:
        return None, ""
    try:
        pair = [race.first, race.second]
        return [[int(e.step), int(e.tid), str(e.op), str(e.loc), "race"] for e in pair], str(race)
    except (TypeError, AttributeError, ValueError):
        return None, str(race)


def _record(failure: Any, base: int) -> FailureRecord:
    """A failure of the engine as plain data (``base``: the global index of the unit's first schedule)."""
    race, race_text = _race(failure)
    key = race_key(failure)
    return FailureRecord(
        kind=str(failure.kind),
        message=failure.message,
        schedule_index=base + int(failure.schedule_index),
        preemptions=int(failure.preemptions),
        steps=int(failure.steps),
        trace=str(failure.trace),
        engine_token=str(failure.token),
        thread=getattr(failure, "thread", None),
        events=[_event(e) for e in failure.events],
        race=race,
        race_text=race_text,
        cleanup=list(getattr(failure, "cleanup", [])),
        depends_on_schedule=getattr(failure, "depends_on_schedule", None),
        occurrences=int(getattr(failure, "occurrences", 1)),
        signature=[str(part) for part in getattr(failure, "signature", ())],
        race_key=key,
        incomplete=str(getattr(failure, "incomplete", "")),
        undecided=str(getattr(failure, "undecided", "")),
        notes=[str(note) for note in getattr(failure, "notes", ())],
        lanes={f"T{int(tid)}": str(label) for tid, label in sorted(getattr(failure, "lanes", {}).items())},
    )


def failure_record(failure: Any, base: int = 0) -> FailureRecord:
    """A failure of the engine (explored or replayed) as the plain data every command and report shows."""
    return _record(failure, base)


def race_key(failure: Any) -> str:
    """The racing pair's operations and places as one string, comparable across chunks ("" when not named)."""
    race = getattr(failure, "race", None)
    if race is None:
        return ""
    try:
        return repr(race.key())
    except (AttributeError, TypeError):
        return str(race)


def execute_unit(unit: dict, on_schedule: Callable[[dict, Any], None] | None = None) -> dict:
    """Explore one unit; the answer is JSON-safe (it may cross a process or a network). ``on_schedule(unit,
    snapshot)`` is told after every schedule (in-process runs only: the CLI's live progress).

    The answer carries the interleaving key and schedule digest of every schedule run, so a cell explored in
    several chunks (and processes) counts its distinct interleavings and schedules over all of them."""
    from racecheck.api import explore

    keys: list[str] = []
    schedules: list[str] = []

    def progress(snapshot: Any) -> None:
        keys.append(snapshot.interleaving)
        schedules.append(snapshot.schedule)
        if on_schedule is not None:
            on_schedule(unit, snapshot)

    try:
        prepared, kwargs = prepare(unit["catalogue"], unit["scenario"], unit["target"], unit["fs"], unit["instrument"])
        kwargs = {**kwargs, **unit.get("options", {}), "progress": progress}
        started = time.perf_counter()
        result = explore(
            prepared.fn, strategy=unit["strategy"], schedules=unit["schedules"], seed=unit["seed"], **kwargs
        )
        elapsed = time.perf_counter() - started
    except InternalError as exc:  # racecheck's own failure: its message and traceback cross to the CLI whole
        return {"error": exc.summary, "internal": exc.traceback}
    except Exception as exc:  # noqa: BLE001 - reported to the user as one line by the CLI
        text = f"{type(exc).__name__}: {exc}".strip().splitlines()
        return {"error": text[0] if text else type(exc).__name__}
    out: dict[str, Any] = {
        "schedules": result.schedules,
        "executions": result.schedules + sum(int(getattr(f, "shrink_probes", 0)) for f in result.failures),
        "elapsed": elapsed,
        "exhausted": bool(result.exhausted),
        "exhausted_note": result.exhausted_note,
        "interleaving_keys": sorted(set(keys)),
        "schedule_digests": sorted(set(schedules)),
        "failures": [_record(failure, unit["base"]).to_dict() for failure in result.failures],
        "data_races": [{**race.to_dict(), "schedule": unit["base"] + race.schedule} for race in result.data_races],
        "coverage": result.coverage.to_dict() if result.coverage is not None else None,
    }
    return out


# ----- backends: where units run -----------------------------------------------------------------------------------

_REMOTE_SOURCE = """
import racecheck.frontends.parallel as _rc_parallel
_rc_parallel.serve(channel)
"""


def serve(channel: Any) -> None:
    """The loop an execnet gateway runs: units in, results out, None to stop."""
    while True:
        unit = channel.receive()
        if unit is None:
            return
        channel.send(execute_unit(unit))


def expand_tx(specs: Sequence[str]) -> list[str]:
    """``2*popen`` -> ``["popen", "popen"]`` (pytest-xdist's notation)."""
    out = []
    for spec in specs:
        count, star, rest = spec.partition("*")
        if star and count.isdigit():
            if not 1 <= int(count) <= 256:
                raise RunnerError(f"--tx {spec!r}: the count must be between 1 and 256")
            out.extend([rest] * int(count))
        else:
            out.append(spec)
    return out


class _Slot:
    def run(self, unit: dict) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _ProcessSlot(_Slot):
    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def run(self, unit):
        return self.pool.submit(execute_unit, unit).result()


class _GatewaySlot(_Slot):
    def __init__(self, spec: str, group: Any) -> None:
        self.spec = spec
        try:
            self.gateway = group.makegateway(spec)
            self.channel = self.gateway.remote_exec(_REMOTE_SOURCE)
        except Exception as exc:  # noqa: BLE001 - an unusable --tx spec is the user's input
            raise RunnerError(
                f"--tx {spec!r}: cannot start the gateway: {type(exc).__name__}: {_one_line(exc)}"
            ) from None

    def run(self, unit):
        try:
            self.channel.send(unit)
            return self.channel.receive()
        except Exception as exc:  # noqa: BLE001
            return {"error": f"gateway {self.spec!r}: {_one_line(exc)}"}

    def close(self):
        try:
            self.channel.send(None)
            self.channel.waitclose(10)
        except Exception:  # noqa: BLE001 - already gone
            pass


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # execnet's RemoteError carries the remote traceback: its last line is the exception itself
    return lines[-1] if lines else type(exc).__name__


ProgressFn = Callable[[dict, dict], None]


def explore_cells(
    cells: Sequence[Cell],
    jobs: int = 1,
    tx: Sequence[str] = (),
    time_budget: float | None = None,
    progress: ProgressFn | None = None,
    on_schedule: Callable[[dict, Any], None] | None = None,
) -> tuple[list[CellResult], bool]:
    """Explore every cell; returns the per-cell results and whether the time budget stopped the exploration.
    ``progress(unit, result)`` after every unit; ``on_schedule(unit, snapshot)`` after every schedule, only when
    units run in this process (``jobs=1``, no ``tx``): other processes report per unit."""
    units = plan(cells)
    dispatcher = Dispatcher(units, time_budget, [wanted(cell) for cell in cells])
    results: dict[tuple[int, int], dict] = {}

    def finish(unit: dict, result: dict) -> None:
        if "internal" in result:
            raise InternalError(f"{unit['scenario']} [{unit['fs']}]: {result['error']}", result["internal"])
        if "error" in result:
            raise RunnerError(f"{unit['scenario']} [{unit['fs']}]: {result['error']}")
        results[(unit["cell"], unit["chunk"])] = result
        if progress is not None:
            progress(unit, result)

    specs = expand_tx(tx)
    if jobs <= 1 and not specs:
        while (unit := dispatcher.next_unit()) is not None:
            result = execute_unit(unit, on_schedule)
            dispatcher.record(unit, result)
            finish(unit, result)
    else:
        _run_parallel(dispatcher, jobs, specs, finish)
    return [assemble(i, cell, results) for i, cell in enumerate(cells)], dispatcher.budget_hit


def _warm() -> int:
    return os.getpid()


def _process_pool(jobs: int) -> Any:
    """J worker processes, started before any thread of ours exists.

    On Linux they are forked from this process, which has already imported the catalogue and built every cell
    (the CLI validates them first), so a worker starts exploring at once instead of importing Lightning again.
    Elsewhere (no safe fork) they are spawned and build what they need on first use.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method))
    for future in [pool.submit(_warm) for _ in range(jobs)]:  # launches every worker now, from this thread
        future.result()
    return pool


def _run_parallel(dispatcher: Dispatcher, jobs: int, specs: list[str], finish: Callable[[dict, dict], None]) -> None:
    slots: list[_Slot] = []
    pool = group = None
    try:
        if specs:
            try:
                import execnet
            except ImportError:
                raise RunnerError("--tx needs execnet (pip install execnet, or pytest-xdist which brings it)")
            group = execnet.Group()
            slots = [_GatewaySlot(spec, group) for spec in specs]
        else:
            pool = _process_pool(jobs)
            slots = [_ProcessSlot(pool) for _ in range(jobs)]
        done: queue.Queue = queue.Queue()
        stop = threading.Event()

        def work(slot: _Slot) -> None:
            try:
                while not stop.is_set() and (unit := dispatcher.next_unit()) is not None:
                    try:
                        result = slot.run(unit)
                    except Exception as exc:  # noqa: BLE001 - a dead worker process
                        result = {"error": f"worker failed: {_one_line(exc)}"}
                    dispatcher.record(unit, result)
                    done.put((unit, result))
            finally:
                done.put(None)

        threads = [threading.Thread(target=work, args=(slot,), daemon=True) for slot in slots]
        for thread in threads:
            thread.start()
        running = len(threads)
        try:
            while running:
                item = done.get()
                if item is None:
                    running -= 1
                    continue
                finish(*item)
        except BaseException:
            stop.set()
            with dispatcher.lock:
                dispatcher.units.clear()
            raise
        for thread in threads:
            thread.join()
    finally:
        for slot in slots:
            slot.close()
        if group is not None:
            group.terminate(timeout=10)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
