"""Fake filesystem throughput vs a real tmpfs, and what one fake-fs operation adds to a controlled run.

    python benchmarks/bench_fakefs.py [--rounds N] [--baseline GIT_REF]

Workload per round (the shape of a checkpoint save/evict): open "wb", write 4 KiB, close, rename over the
final name, stat, remove. Prints a table of operations per second. With ``--baseline REF`` the same measurements
are also taken, in the same run, on the fake filesystem of that commit (its ``harness/`` extracted with
``git archive`` and imported in a subprocess), and the table shows current/baseline ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import racecheck.fakefs as fakefs
from racecheck.fakefs import FakeFS

OPS_PER_ROUND = 6
CLOCK = time.perf_counter  # --cpu-time: time.process_time (all threads), steadier on a shared, loaded machine
PAYLOAD = b"x" * 4096


def workload(os_mod, open_fn, root: str, rounds: int) -> float:
    start = CLOCK()
    for i in range(rounds):
        tmp, final = f"{root}/c{i % 8}.tmp", f"{root}/c{i % 8}.ckpt"
        with open_fn(tmp, "wb") as f:  # open, write (at close), close
            f.write(PAYLOAD)
        os_mod.replace(tmp, final)
        os_mod.stat(final)
        os_mod.remove(final)
    return CLOCK() - start


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
        start = CLOCK()
        racecheck.explore(fn, strategy="random", schedules=5, fs=fs, shrink_budget=0)
        out.append((CLOCK() - start) / 5)
    return out[0], out[1]


def measure(rounds: int, engine_rounds: int) -> dict:
    store_s = bench_store(rounds)
    real_s, where = bench_real(rounds)
    n_ops = rounds * OPS_PER_ROUND
    out = {"store_ops_s": n_ops / store_s, "real_ops_s": n_ops / real_s, "where": where}
    engine = bench_engine(engine_rounds)
    if engine is not None:
        with_fs, without_fs = engine
        out["op_us"] = with_fs / (engine_rounds * OPS_PER_ROUND) * 1e6
        out["point_us"] = without_fs / (engine_rounds * OPS_PER_ROUND) * 1e6
    return out


def baseline(ref: str, rounds: int, engine_rounds: int) -> dict:
    """The same measurements on the fake filesystem of git ``ref`` (engine included), in a subprocess."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="bench-fakefs-baseline-")
    try:
        archive = subprocess.run(["git", "-C", repo, "archive", ref, "harness"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        os.symlink(os.path.join(tmp, "harness"), os.path.join(tmp, "racecheck"))
        env = dict(os.environ, PYTHONPATH=tmp + os.pathsep + os.environ.get("PYTHONPATH", ""))
        extra = ["--cpu-time"] if CLOCK is time.process_time else []
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--json", "--rounds", str(rounds),
                               "--engine-rounds", str(engine_rounds), *extra], env=env, check=True,
                              capture_output=True, text=True, cwd=tmp)
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--engine-rounds", type=int, default=100)
    parser.add_argument("--baseline", metavar="GIT_REF", help="also measure this commit's fake fs, same run")
    parser.add_argument("--cpu-time", action="store_true", help="measure process CPU time instead of wall time")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    now = measure(args.rounds, args.engine_rounds)
    if args.json:
        print(json.dumps(now))
        return 0
    before = baseline(args.baseline, args.rounds, args.engine_rounds) if args.baseline else None
    rows = [("fake store, no scheduler (ops/s)", "store_ops_s"), (f"real {now['where']} (ops/s)", "real_ops_s"),
            ("controlled run: us per fake-fs op", "op_us"), ("controlled run: us per racecheck.point", "point_us")]
    head = f"{'measure':<40}{'current':>12}"
    if before:
        head += f"{'baseline ' + args.baseline:>22}{'current/baseline':>18}"
    print(head)
    for label, key in rows:
        if key not in now:
            continue
        line = f"{label:<40}{now[key]:>12,.1f}"
        if before and key in before:
            line += f"{before[key]:>22,.1f}{now[key] / before[key]:>18.2f}"
        print(line)
    print(f"fake/real throughput: {now['store_ops_s'] / now['real_ops_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
