"""Scenarios that drive a checkpoint manager (``takes="manager"``): back-to-back async saves with a tracker and
``keep_last_n`` retention, judged at instants chosen by the scheduler and after a power loss at any point.

Why these oracles: the invariant every 2026 report breaks (docs/checkpoint-managers.md) is "at every instant, and
after a crash at any point, a checkpoint the tracker names is complete and loadable; no save is lost". The
instant check (``manager_contract.tracked_checkpoint``) reads the fake store without a scheduling point, so what
it sees is one instant: it runs after every call of the workload and, in a watcher thread, at scheduling points
the strategy places among the manager's own operations (or, with ``small_config(sentinel=True)``, at every step:
``manager_sentinel``). Loading (through a fresh manager's ``resume``) is left to
the end and to the crash recovery, where nothing else runs.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from racecheck import runtime
from racecheck.scenarios.manager_contract import consistent_step, state, tracked_checkpoint
from racecheck.scenarios.manager_leaks import no_leaked_threads
from racecheck.scenarios.manager_sentinel import Sentinel

KEEP_LAST_N = 1
STEPS = (1, 2, 3)
WATCHER_CHECKS = 3


def check_now(ctx: Any, when: str) -> None:
    """The instant invariant: the tracker names a complete checkpoint (or there is no tracker yet)."""
    manager_class = ctx.target.io_class
    found = tracked_checkpoint(manager_class, ctx.directory)
    if found is not None:
        text, why = found
        raise AssertionError(f"{when}: the tracker ({manager_class.tracker_file} = {text!r}) names a checkpoint "
                             f"that is not complete: {why}")


def config(ctx: Any) -> tuple[tuple[int, ...], int]:
    """(steps, watcher checks): the defaults, or a smaller configuration's (``small_config``)."""
    extra = ctx.scenario.extra or {}
    return tuple(extra.get("steps", STEPS)), int(extra.get("watcher_checks", WATCHER_CHECKS))


def small_config(scenario: Any, steps: tuple[int, ...] = (1, 2), watcher_checks: int = 1,
                 sentinel: bool = False) -> Any:
    """``scenario`` with fewer saves and watcher checks: a space dpor can exhaust. ``sentinel``: the instant check
    at every step (``manager_sentinel``) in place of the watcher (dpor's proofs keep the watcher: its checks
    conflict with every step; docs/checkpoint-managers.md)."""
    return replace(scenario, extra={"steps": steps, "watcher_checks": watcher_checks, "sentinel": sentinel})


def watch(ctx: Any, errors: list[BaseException]) -> None:
    """A racing resume's view: the instant check at scheduling points the strategy places."""
    for n in range(config(ctx)[1]):
        runtime.point("tracker check")
        try:
            check_now(ctx, f"at an instant (watcher check {n + 1})")
        except AssertionError as exc:
            errors.append(exc)
            return


def resumed(ctx: Any) -> Any:
    """What a restarted job's fresh manager ``resume()``s (None: nothing); a ``resume()`` that raises fails."""
    manager = ctx.new_manager(KEEP_LAST_N)
    try:
        try:
            return manager.resume()
        except Exception as exc:  # noqa: BLE001 - a resume that raises is what the invariant forbids
            raise AssertionError(f"resume() raised {type(exc).__name__}: {exc}") from None
    finally:
        manager.close()


def resumed_step(ctx: Any) -> int | None:
    """What a restarted job resumes from: a fresh manager's ``resume()``, checked for consistency."""
    state = resumed(ctx)
    return None if state is None else consistent_step(state)


def run_saves(ctx: Any, watcher: bool) -> int:
    """The saves, finalize and close, checked at every instant the workload and the watcher (or the sentinel) see;
    the last step."""
    steps, checks = config(ctx)
    every_step = watcher and bool((ctx.scenario.extra or {}).get("sentinel"))
    watcher = watcher and checks > 0 and not every_step
    no_leaked_threads()  # once the run completes, no thread of the manager may be left parked
    manager = ctx.new_manager(KEEP_LAST_N)
    errors: list[BaseException] = []
    thread = threading.Thread(target=watch, args=(ctx, errors), name="tracker-check") if watcher else None
    sentinel = Sentinel(ctx.target.io_class, ctx.directory) if every_step else None
    if thread is not None:
        thread.start()
    if sentinel is not None:
        sentinel.start()
    try:
        for step in steps:
            manager.save(step, state(step))
            check_now(ctx, f"after save({step}) returned")
        manager.finalize()
        ctx.state["finalized"] = steps[-1]
        check_now(ctx, "after finalize()")
    finally:
        try:
            manager.close()
        finally:
            if thread is not None:
                thread.join()
            if sentinel is not None:
                sentinel.stop()
    if errors:
        raise errors[0]
    if sentinel is not None:
        sentinel.check()
    return steps[-1]


def manager_retention(ctx: Any) -> None:
    """keep_last_n=1, saves of steps 1, 2, 3 back to back, then finalize() and close(): at every instant checked
    (after each call, and by a watcher thread at points the schedule picks) the tracker names a complete
    checkpoint; afterwards a fresh manager resumes step 3, no more than keep_last_n checkpoints remain, and no
    thread of the manager is left running.

    Reader: target. Checkpoints are loaded through a fresh instance of the manager (its resume); the tracker and
    each checkpoint's complete marker are read on the filesystem, by name.
    """
    last = run_saves(ctx, watcher=True)
    step = resumed_step(ctx)
    if step != last:
        raise AssertionError(f"after finalize(), resume() gives {step!r}; step {last} was saved and finalized")
    manager_class = ctx.target.io_class
    left = [p for p, _size, _hash in _store_files() if p.endswith(f"/{manager_class.complete_marker}")
            and p.startswith(ctx.directory + "/")]
    if len(left) > KEEP_LAST_N:
        raise AssertionError(f"retention kept {len(left)} complete checkpoints with keep_last_n={KEEP_LAST_N}")


def _store_files() -> list[tuple[str, int, str]]:
    from racecheck import fakefs

    return fakefs.current_store().files()


def manager_crash(ctx: Any) -> None:
    """keep_last_n=1, saves of steps 1, 2, 3 back to back, then finalize() and close(), with a power loss at any
    point: the tracker names a complete checkpoint that a fresh manager resumes, and once finalize() returned,
    the resumed step is the last one saved (no save is lost).

    Reader: target. After the crash, the tracker and complete markers are read by name, and the checkpoint is
    loaded through a fresh instance of the manager (its resume).
    """
    last = run_saves(ctx, watcher=False)
    if resumed_step(ctx) != last:
        raise AssertionError(f"after finalize(), resume() does not give step {last}")


def manager_crash_recovery(ctx: Any) -> None:
    check_now(ctx, "after a power loss")
    step = resumed_step(ctx)
    finalized = ctx.state.get("finalized")
    if finalized is not None and step != finalized:
        raise AssertionError(f"after a power loss, resume() gives {step!r}, but step {finalized} was saved and "
                             "finalize() had returned")
