"""dpor with and without its lock-aware reduction (``racecheck.search.lock_aware``), on programs whose shared state
is behind the program's own locks: schedules / classes (``result.interleavings``) / exhausted / seconds of each.

    python benchmarks/bench_lock_aware.py            # every row
    python benchmarks/bench_lock_aware.py --quick    # without the 3-worker stats (tens of seconds per side)

Counts are deterministic; seconds are of one run on a shared machine, rough. docs/performance.md has the table.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import racecheck
from racecheck.search import dpor

ROOT = Path(__file__).resolve().parent.parent
for folder in ("tests/search", "tests/sctbench"):
    sys.path.insert(0, str(ROOT / folder))

import handoff_programs  # noqa: E402
import twin_programs  # noqa: E402
from programs import stack_ok  # noqa: E402

CAP = 30_000


@dataclass
class Stats:
    hits: int = 0
    total: float = 0.0


def stats(workers: int):
    """Issue 49's correctly locked stats: every update under one lock, fed by ``pool.map`` over ``workers`` items."""

    def program() -> None:
        state, lock = Stats(), threading.Lock()

        def record(value: int) -> int:
            with lock:
                state.hits += 1
                state.total += value
            return value

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(record, range(1, workers + 1)))
        assert results == list(range(1, workers + 1)) and state.hits == workers

    program.__name__ = f"locked stats, {workers} workers"
    return program


def counter(threads: int, own: bool):
    """``threads`` threads each add 1 under one lock: to one counter (critical sections that conflict) or each to
    its own slot of a list made before they start (critical sections that commute)."""

    def program() -> None:
        lock = threading.Lock()
        slots = [0] * threads

        def add(k: int) -> None:
            with lock:
                slots[k if own else 0] += 1

        workers = [threading.Thread(target=add, args=(k,)) for k in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert sum(slots) == threads

    program.__name__ = f"{threads} threads, {'own slots' if own else 'one counter'} under one lock"
    return program


def rows(quick: bool) -> list:
    out = [stats(2)] + ([] if quick else [stats(3)])
    out += [counter(n, own) for n in (3, 4) for own in (False, True)]
    out.append(stack_ok)
    out += [getattr(twin_programs, name) for name in ("job_queue", "latch", "dataclass_stats", "slots_stats",
                                                       "registry", "ttl_cache", "session")
            if hasattr(twin_programs, name)]
    out += [handoff_programs.locked_twin(program) for program in handoff_programs.FIVE]
    return out


def measure(fn, aware: bool) -> str:
    dpor.LOCK_AWARE = aware
    start = time.perf_counter()
    result = racecheck.explore(fn, strategy="dpor", schedules=CAP, shrink_budget=0, race_budget=0)
    seconds = time.perf_counter() - start
    verdict = "exhausted" if result.exhausted else "not exhausted"
    if not result.ok:
        verdict += ", FAILED"
    return f"{result.schedules:,} / {result.interleavings:,} / {verdict} / {seconds:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print("| program | dpor before (every lock order) | dpor lock-aware |")
    print("| --- | --- | --- |")
    for fn in rows(args.quick):
        print(f"| {fn.__name__} | {measure(fn, False)} | {measure(fn, True)} |", flush=True)
    dpor.LOCK_AWARE = True


if __name__ == "__main__":
    main()
