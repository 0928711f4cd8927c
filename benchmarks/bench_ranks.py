"""Ranks of the run: seconds per two-rank schedule after warm-up, next to the same program run plainly on gloo.

    python benchmarks/bench_ranks.py [--schedules 4] [--runs 2] [--methods fork,spawn,dcp,dcp-async]
                                     [--cut on|off|both] [--rounds 1] [--no-plain]

The workload is the ordered twin of tests/ranks' retention (two ranks started with
``torch.multiprocessing.start_processes``, fork and spawn: ``init_process_group`` on ``file://``, a barrier, a shard
each with ``torch.save``, a barrier, rank 0's retention, ``destroy_process_group``). Plain: the program run for
real (real gloo), ``--runs`` times. Controlled: one warm-up exploration of one schedule, then ``--schedules``
schedules of pct timed. Every schedule starts its ranks for real; a spawned rank is forked from the exploration's
warm template (``processes.warm``), which is started, and imports torch, in each exploration's first schedule.
``dcp``: two forked ranks each saving a tensor with a synchronous ``torch.distributed.checkpoint.save``.
``dcp-async``: tests/dcp's ``two_ranks_ordered``, two spawned ranks each making two process-based
``async_save`` (each rank's daemon a spawned grandchild, forked from a template: ``processes.grand_warm``); its
controlled figure is a schedule after warm-up within one exploration: the median time between two schedules' ends
in an exploration of ``1 + --schedules`` (the earlier figure, that exploration's time less one schedule's, per
schedule, is printed beside it).

``--cut``: whether a child's lone thread makes its plain memory accesses without points (``child_memory.LONE_CUT``,
on by default); ``both`` measures the controlled figure with it off, then on, ``--rounds`` times, alternating (the
same machine, the same minutes). ``--no-plain`` leaves the plain runs out.

Wall-clock figures, reported and never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import racecheck
from racecheck.control.processes import child_memory

_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
sys.path[:0] = [os.path.join(_TESTS, "ranks"), os.path.join(_TESTS, "dcp")]
import dcp_programs  # noqa: E402 - the tests' programs
import rank_programs as programs  # noqa: E402


def _clock() -> float:
    """A real clock that no stand-in replaces."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _explore(fn, schedules: int, progress=None):
    return racecheck.explore(fn, strategy="pct", seed=1, schedules=schedules, shrink_budget=0, race_budget=0,
                             watchdog=10, progress=progress)


def seconds_per_schedule(fn, schedules: int) -> float:
    _explore(fn, 1)  # warm-up: imports, the rewrite cache, torch's first fork
    start = _clock()
    result = _explore(fn, schedules)
    elapsed = _clock() - start
    if not result.ok:
        raise SystemExit(f"bench_ranks: the ordered twin failed: {result.failure.message}")
    return elapsed / result.schedules


def seconds_per_later_schedule(fn, schedules: int) -> float:
    """A schedule after the exploration's first (its templates started, torch imported in them): the median of the
    times between one schedule's end and the next's, within one exploration of ``1 + schedules``. Printed beside
    it, the figure of the first rounds of this table: that exploration's time less that of one schedule, per
    schedule (a difference of two noisy times)."""
    _explore(fn, 1)  # warm-up: imports, the rewrite cache
    start = _clock()
    _explore(fn, 1)
    one = _clock() - start
    ends: list[float] = []
    start = _clock()
    result = _explore(fn, 1 + schedules, progress=lambda _snapshot: ends.append(_clock()))
    more = _clock() - start
    if not result.ok:
        raise SystemExit(f"bench_ranks: the ordered twin failed: {result.failure.message}")
    gaps = sorted(later - earlier for earlier, later in zip(ends, ends[1:], strict=False))
    print(f"  ({fn.__name__}, {result.max_steps_seen} steps: one schedule {one:.2f} s, {result.schedules} schedules "
          f"{more:.2f} s, so {(more - one) / (result.schedules - 1):.2f} s; later schedules "
          f"{', '.join(f'{gap:.2f}' for gap in gaps)} s; load {os.getloadavg()[0]:.1f})", flush=True)
    return statistics.median(gaps)


def seconds_per_plain_run(fn, runs: int) -> float:
    fn()  # warm-up
    start = _clock()
    for _ in range(runs):
        fn()
    return (_clock() - start) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--methods", default="fork,spawn,dcp,dcp-async", help="workloads to measure, comma-separated")
    parser.add_argument("--cut", choices=("on", "off", "both"), default="on",
                        help="a child's lone thread's memory without points: on, off, or both alternating")
    parser.add_argument("--rounds", type=int, default=1, help="with --cut both: how many off/on pairs")
    parser.add_argument("--no-plain", action="store_true", help="leave the plain runs out")
    args = parser.parse_args()
    if min(args.schedules, args.runs, args.rounds) < 1:
        parser.error("--schedules, --runs and --rounds must be >= 1")
    cuts = {"on": [True], "off": [False], "both": [False, True] * args.rounds}[args.cut]
    print(f"{'workload':<56} {'plain':>12} {'controlled':>16} {'ratio':>8}  goal")
    workloads = {"fork": programs.retention_fixed_fork, "spawn": programs.retention_fixed_spawn,
                 "dcp": programs.dcp_save_fork, "dcp-async": dcp_programs.two_ranks_ordered}
    methods = args.methods.split(",")
    if any(method not in workloads for method in methods):
        parser.error(f"--methods: choose among {', '.join(workloads)}")
    for method in methods:
        fn = workloads[method]
        plain = float("nan") if args.no_plain else seconds_per_plain_run(fn, args.runs)
        later = method == "dcp-async"
        what = {"dcp": "DCP save, fork", "dcp-async": "DCP async_save (process), spawn, later"}.get(
            method, f"{method}, retention twin")
        for cut in cuts:
            child_memory.LONE_CUT = cut
            controlled = (seconds_per_later_schedule if later else seconds_per_schedule)(fn, args.schedules)
            goal = f"<= 2 s: {'met' if controlled <= 2 else 'NOT met'}"
            name = f"two ranks, {what}{'' if cut else ', no cut'} (s per run/schedule)"
            print(f"{name:<56} {plain:>10.2f} s {controlled:>14.2f} s {controlled / plain:>7.2f}x  {goal}",
                  flush=True)


if __name__ == "__main__":
    main()
