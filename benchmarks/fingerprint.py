"""A determinism fingerprint: one digest of every schedule a fixed set of explorations runs, to compare across a change.

    python benchmarks/fingerprint.py [--schedules 60] [--seed 3]

A performance change to the engine must not change what it explores: the same seed must give the same schedules,
the same tokens and the same traces. This runs the classic bugs of ``tests/engine/classic_bugs.py`` (ten programs,
with their fixes), the no-op workload and the stock ``AsyncCheckpointIO`` micro workload of ``bench_engine.py``,
each under random, pct, dfs, pos and dpor, and hashes every run's choices, arities, picks, decision steps, step count,
preemptions and whole trace (read as each run is detached, so shrinking and located reruns count too), then each
exploration's result (schedules, distinct interleavings, exhaustion, the failure's token, kind and rendered trace).
Run it before and after a change, and under another ``PYTHONHASHSEED``: the ``fingerprint`` line must not change. A
change that is meant to alter schedules (new scheduling points) changes it, which is the point: say so in its
commit. Trace events are hashed without what each step touches (their first five fields: the text a person reads),
so recording accesses left it as it was; the ``with accesses`` line adds them, for a change to what operations say
they touch.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile

import racecheck
from racecheck.runtime import scheduler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "tests", "engine"))
import bench_engine  # noqa: E402
import classic_bugs  # noqa: E402

PROGRAMS = (
    "lost_update", "lost_update_fixed", "check_then_act", "lock_order_deadlock", "missed_wakeup",
    "missed_wakeup_fixed", "submit_races_shutdown", "submit_races_shutdown_fixed", "futures_order_violation",
    "futures_order_fixed",
)


def stable_event(event) -> tuple:
    """A trace event as plain text and numbers, whatever types the engine uses for its objects and kinds: the
    ``with accesses`` line compares what each step touched across a change of representation (typed objects and
    kinds print their text here, as they did when they were strings)."""
    touched = tuple((str(a.obj), str(a.kind), a.path, a.parent) for a in event.access)
    return (event.step, event.tid, event.op, event.loc, event.switch, touched, event.at, tuple(event.marks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=60)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    if args.schedules < 1:
        parser.error("--schedules must be >= 1")
    digest = hashlib.sha256()
    accesses = hashlib.sha256()
    real_detach = scheduler.Run.detach

    directory = tempfile.mkdtemp(prefix="racecheck-fingerprint-")

    def same_in_every_process(text: str) -> bytes:
        """The micro workload's files are real-disk points naming paths in ``directory``, whose name is random."""
        return text.replace(directory, "<directory>").encode()

    def detach(run: scheduler.Run) -> None:
        digest.update(same_in_every_process(repr((
            run.choices, run.arities, run.picked, run.decision_steps, run.steps, run.preemptions,
            [tuple(event)[:5] for event in run.trace],
        ))))
        accesses.update(same_in_every_process(repr([stable_event(event) for event in run.trace])))
        real_detach(run)

    programs = [(name, getattr(classic_bugs, name)) for name in PROGRAMS]
    programs.append(("noop workload", bench_engine.noop_workload))
    programs.append(("micro workload", lambda: bench_engine.micro_workload(directory)))
    scheduler.Run.detach = detach
    try:
        for name, fn in programs:
            for strategy in ("random", "pct", "dfs", "pos", "dpor"):
                result = racecheck.explore(fn, strategy=strategy, schedules=args.schedules, seed=args.seed)
                failure = result.failure
                line = (name, strategy, result.ok, result.schedules, result.interleavings, result.exhausted,
                        None if failure is None else (failure.token, failure.kind, failure.trace))
                digest.update(same_in_every_process(repr(line)))
                accesses.update(same_in_every_process(repr(line)))
                print(f"{name:28} {strategy:6} schedules={result.schedules:<4} interleavings={result.interleavings:<4} "
                      + ("ok" if failure is None else f"{failure.kind} {failure.token}"))
    finally:
        scheduler.Run.detach = real_detach
        shutil.rmtree(directory, ignore_errors=True)
    accesses.update(digest.digest())
    print(f"fingerprint {digest.hexdigest()}")
    print(f"with accesses {accesses.hexdigest()}")


if __name__ == "__main__":
    main()
