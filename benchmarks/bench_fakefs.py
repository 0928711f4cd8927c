"""Fake filesystem throughput vs a real tmpfs, and what one fake-fs operation adds to a controlled run.

    /work/venv/bin/python benchmarks/bench_fakefs.py [--rounds N]

Workload per round (the shape of a checkpoint save/evict): open "wb", write 4 KiB, close, rename over the
final name, stat, remove. Prints a table of operations per second.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import racecheck.fakefs as fakefs
from racecheck.fakefs import FakeFS

OPS_PER_ROUND = 6
PAYLOAD = b"x" * 4096


def workload(os_mod, open_fn, root: str, rounds: int) -> float:
    start = time.perf_counter()
    for i in range(rounds):
        tmp, final = f"{root}/c{i % 8}.tmp", f"{root}/c{i % 8}.ckpt"
        with open_fn(tmp, "wb") as f:  # open, write (at close), close
            f.write(PAYLOAD)
        os_mod.replace(tmp, final)
        os_mod.stat(final)
        os_mod.remove(final)
    return time.perf_counter() - start


class _NullRun:
    """A run whose scheduling points cost nothing: isolates the store's own cost from the scheduler's."""

    def __init__(self) -> None:
        self.resources: dict = {}

    def schedule(self, op, **kw):
        return True

    def now(self):
        return 0.0


def bench_store(rounds: int) -> float:
    from racecheck.runtime import bind

    run = _NullRun()
    fakefs.begin_run(run, FakeFS())
    bind(run, object())
    try:
        return workload(fakefs.os_facade, fakefs.fake_open, fakefs.root(), rounds)
    finally:
        bind(None, None)


def bench_real(rounds: int) -> tuple[float, str]:
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = tempfile.mkdtemp(prefix="bench-fakefs-", dir=base)
    try:
        return workload(os, open, root, rounds), base or tempfile.gettempdir()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_engine(rounds: int) -> tuple[float, float] | None:
    """Seconds per schedule of a controlled run with and without the fake-fs workload (one thread)."""
    try:
        import racecheck
    except ImportError:
        return None
    if not hasattr(racecheck, "explore"):
        return None

    def with_fs():
        workload(os, open, "/racefs", rounds)

    def without_fs():
        for _ in range(rounds * OPS_PER_ROUND):
            racecheck.point("p")

    racecheck.explore(with_fs, strategy="random", schedules=1, fs="posix", shrink_budget=0)  # warm-up: imports
    out = []
    for fn, fs in ((with_fs, "posix"), (without_fs, None)):
        start = time.perf_counter()
        racecheck.explore(fn, strategy="random", schedules=5, fs=fs, shrink_budget=0)
        out.append((time.perf_counter() - start) / 5)
    return out[0], out[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    n_ops = args.rounds * OPS_PER_ROUND
    store_s = bench_store(args.rounds)
    real_s, where = bench_real(args.rounds)
    print(f"{'backend':<34}{'ops':>8}{'seconds':>10}{'ops/s':>12}")
    print(f"{'fake store (no scheduler)':<34}{n_ops:>8}{store_s:>10.3f}{n_ops / store_s:>12,.0f}")
    print(f"{'real ' + where:<34}{n_ops:>8}{real_s:>10.3f}{n_ops / real_s:>12,.0f}")
    print(f"ratio fake/real throughput: {real_s / store_s:.2f}x")
    engine_rounds = 100
    engine = bench_engine(engine_rounds)
    if engine is None:
        print("engine overhead: racecheck.explore not available")
    else:
        with_fs, without_fs = engine
        per_op_us = with_fs / (engine_rounds * OPS_PER_ROUND) * 1e6
        point_us = without_fs / (engine_rounds * OPS_PER_ROUND) * 1e6
        print(f"controlled run: {per_op_us:.1f} us per fake-fs op vs {point_us:.1f} us per bare racecheck.point "
              f"(fake-fs adds {per_op_us - point_us:.1f} us per op over a scheduling point)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
