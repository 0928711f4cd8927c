"""Processes of the run: what a child's scheduling point costs, and schedules per second of the issue's leak.

    python benchmarks/bench_processes.py [--rounds 2000] [--repeats 5] [--schedules 20]

1. A cross-process scheduling point (a forked child reading a served ``multiprocessing.Value`` in a loop: one
   request to its proxy, one point of the proxy's, one answer) against a plain pipe round trip between two
   processes (``multiprocessing.Pipe``, the child echoing), each loop timed alone (process start and the run's
   fixed costs stay out), the two sides alternating. Goal: <= 1.5x. Two rows: wall time, and the CPU time both
   sides spend per round trip (thread CPU clocks: what the wall time is on an idle machine, less the two wake-ups
   both kinds of round trip pay; steady where the wall time swings with the machine's load).
2. Schedules per second of the checkpoint leak of issue 45 (a child writes ``epoch=0.ckpt`` and reports on a queue
   while the parent evicts) under pct, with fork and with spawn children, next to the same program run plainly.

Medians of ``--repeats``; wall-clock figures, reported and never asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time

import racecheck
from racecheck.control.processes import children

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "processes"))
import programs  # noqa: E402 - the tests' programs, the leak among them

_CTX = multiprocessing.get_context("fork")
ONE_CPU = os.environ.get("ONE_CPU", "1") == "1"


def _clock() -> float:
    """A real clock that no stand-in replaces (``time.perf_counter`` reads the run's virtual clock in a run)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _cpu() -> float:
    """CPU seconds of the calling thread: what a side of a round trip spends, waiting for the other side aside (far
    steadier than wall time on a loaded machine)."""
    return time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)


def _echo(conn, rounds, report):
    start = _cpu()
    for _ in range(rounds):
        conn.send_bytes(conn.recv_bytes())
    report.send((_cpu() - start) / rounds)


def plain_round_trips(rounds: int) -> tuple[float, float]:
    """Seconds per round trip of a parent and a child echoing over a pipe (the loop alone is timed), and the CPU
    seconds both sides spent per round trip."""
    here, there = _CTX.Pipe()
    report, report_end = _CTX.Pipe()
    child = _CTX.Process(target=_echo, args=(there, rounds, report_end))
    child.start()
    here.send_bytes(b"x")  # the child is up: its first echo
    here.recv_bytes()
    start, cpu = _clock(), _cpu()
    for _ in range(rounds - 1):
        here.send_bytes(b"x")
        here.recv_bytes()
    elapsed, cpu = _clock() - start, _cpu() - cpu
    child_cpu = report.recv()
    child.join()
    return elapsed / (rounds - 1), cpu / (rounds - 1) + child_cpu


def _read(value, rounds, report):
    value.value  # noqa: B018 - the first request, not timed
    start, cpu = _clock(), _cpu()
    for _ in range(rounds):
        value.value  # noqa: B018 - the read is the point
    report.put(((_clock() - start) / rounds, (_cpu() - cpu) / rounds))


def served_points(rounds: int, out: list) -> None:
    value, report = _CTX.Value("i", 0), _CTX.Queue()
    child = _CTX.Process(target=_read, args=(value, rounds, report))
    child.start()
    out.append(report.get())
    child.join()


def controlled_points(rounds: int) -> tuple[float, float]:
    """Seconds per scheduling point of a forked child reading a served Value (timed in the child), and the CPU
    seconds per point of the child and of its proxy thread in the parent."""
    out: list = []
    proxy_cpu: list = []
    serve = children.Child.serve

    def timed_serve(child) -> None:  # the proxy thread's body, its CPU time taken
        start = _cpu()
        try:
            serve(child)
        finally:
            proxy_cpu.append(_cpu() - start)

    children.Child.serve = timed_serve
    try:
        result = racecheck.explore(lambda: served_points(rounds, out), strategy="dfs", schedules=1, memory=False,
                                   one_cpu=ONE_CPU)
    finally:
        children.Child.serve = serve
    assert result.ok, result.failure
    wall, child_cpu = out[-1]
    return wall, child_cpu + proxy_cpu[-1] / (rounds + 1)


def _schedules_per_second(fn, schedules: int) -> float:
    start = time.perf_counter()
    result = racecheck.explore(fn, strategy="pct", schedules=schedules, max_failures=schedules, shrink_budget=0,
                               race_budget=0)
    return result.schedules / (time.perf_counter() - start)


def _plain_per_second(fn, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        try:
            fn()
        except AssertionError:
            pass
    return runs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--schedules", type=int, default=20)
    args = parser.parse_args()
    if min(args.rounds, args.repeats, args.schedules) < 1:
        parser.error("--rounds, --repeats and --schedules must be >= 1")
    pairs = [(plain_round_trips(args.rounds), controlled_points(args.rounds)) for _ in range(args.repeats)]
    print(f"{'workload':<72} {'plain':>16} {'controlled':>18} {'ratio':>8}  goal")
    for name, at in (("wall", 0), ("CPU of both sides", 1)):
        plain = statistics.median(p[at] for p, _ in pairs)
        served = statistics.median(c[at] for _, c in pairs)
        ratio = statistics.median(c[at] / p[at] for p, c in pairs)
        label = f"a cross-process point vs a plain pipe round trip ({name})"
        print(f"{label:<72} {plain * 1e6:>13.1f} us {served * 1e6:>15.1f} us {ratio:>7.2f}x  "
              f"<= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'}")
    for method, fn in (("fork", programs.leak_fork), ("spawn", programs.leak_spawn)):
        runs = args.schedules if method == "fork" else max(args.schedules // 4, 2)
        plain_rate = _plain_per_second(fn, runs)
        rate = _schedules_per_second(fn, runs)
        print(f"{f'issue 45 leak, {method} child, pct ({runs} schedules)':<72} {plain_rate:>12.1f} run/s "
              f"{rate:>11.1f} sched/s {rate / plain_rate:>7.2f}x")


if __name__ == "__main__":
    main()
