"""Programs explored one after another in one process, and each in a fresh one (tests/engine/test_verdict_isolation.py):
a verdict must be a function of the program and its options only. Run as a script, it explores the named programs in
order and prints one JSON line per exploration: its verdict line, the failing trace and the data races."""

from __future__ import annotations

import json
import sys
import threading
import time

import racecheck


def points_counter() -> None:
    """A lost update between explicit points (PCT's home ground)."""
    state = {"n": 0}

    def inc() -> None:
        v = state["n"]
        racecheck.point("between read and write")
        state["n"] = v + 1

    threads = [threading.Thread(target=inc) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["n"] == 3


def barrier_phases() -> None:
    """Three threads meet at a barrier twice; each phase's writes are read after it."""
    barrier = threading.Barrier(3)
    slots = [0, 0, 0]

    def work(i: int) -> None:
        slots[i] = 1
        barrier.wait()
        assert sum(slots) == 3
        barrier.wait()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def barrier_short() -> None:
    """A barrier for three that only two threads reach: a deadlock, its threads unwound."""
    barrier = threading.Barrier(3)
    threads = [threading.Thread(target=barrier.wait) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class SpinLock:
    """A correct test-and-set spin lock that yields between tries."""

    def __init__(self) -> None:
        self._taken = threading.Lock()

    def acquire(self) -> None:
        while not self._taken.acquire(blocking=False):
            time.sleep(0)

    def release(self) -> None:
        self._taken.release()


def spin_lock() -> None:
    lock = SpinLock()
    box = {"n": 0}

    def work() -> None:
        lock.acquire()
        v = box["n"]
        box["n"] = v + 1
        lock.release()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["n"] == 2


class Flag:
    def __init__(self) -> None:
        self.ready = False
        self.value = 0


def flag_spin() -> None:
    """A flag polled with sleep(0) between reads: racy (no lock) but it never livelocks under fair scheduling."""
    flag = Flag()

    def writer() -> None:
        flag.value = 42
        flag.ready = True

    t = threading.Thread(target=writer)
    t.start()
    while not flag.ready:
        time.sleep(0)
    assert flag.value == 42
    t.join()


def collected_results() -> None:
    results: list[int] = []
    threads = [threading.Thread(target=results.append, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 1]


class Scratch:
    def __init__(self) -> None:
        self.n = 0


def bump(scratch: Scratch) -> None:
    scratch.n = scratch.n + 1


def private_work() -> int:
    """Memory work on an object one thread alone touches: sampled runs leave ``bump`` unwatched once learned."""
    scratch = Scratch()
    for _ in range(150):
        bump(scratch)
    return scratch.n


def shared_scratch() -> None:
    """``bump`` on one object from two threads (a lost update): the code sampled watching finds sharing memory here
    is the code it leaves unwatched in ``sampled_lazy``, so what one exploration learned must not reach the other."""
    scratch = Scratch()

    def worker() -> None:
        for _ in range(3):
            bump(scratch)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert scratch.n == 6


class Lazy:
    def __init__(self) -> None:
        self.value: object | None = None
        self.made = 0

    def get(self) -> object:
        if self.value is None:
            self.made += 1
            self.value = object()
        return self.value


def sampled_lazy() -> None:
    """A check-then-act lazy init after much private work: what sampled watching (random, pct, pos) learns from
    its learning runs decides what later runs watch, so it must learn the same in a fresh process."""
    lazy = Lazy()

    def worker() -> None:
        private_work()
        lazy.get()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lazy.made == 1


def executor_files() -> None:
    """The upstream Lightning shape on the fake filesystem (``fs="posix"``): an executor's worker dumps the state
    (a hand-off to json, code racecheck does not watch) to a temporary file, renames it onto the checkpoint and
    checks it, while the main thread changes the state and evicts the checkpoint."""
    import json
    import os
    from concurrent.futures import ThreadPoolExecutor

    os.makedirs("/racefs/iso", exist_ok=True)
    path = "/racefs/iso/ckpt.json"
    state = {"step": 1, "weights": list(range(8))}

    def commit() -> None:
        with open(path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(path + ".tmp", path)
        os.stat(path)

    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(commit)
        state["step"] = 2
        if os.path.exists(path):
            os.remove(path)
        done.result()


PROGRAMS = {fn.__name__: fn for fn in (points_counter, barrier_phases, barrier_short, spin_lock, flag_spin,
                                       collected_results, shared_scratch, sampled_lazy, executor_files)}
OPTIONS = {"executor_files": {"fs": "posix"}}
STRATEGIES = ("random", "pct", "dfs", "pos", "dpor")


def verdicts(name: str) -> list[dict]:
    out = []
    for strategy in STRATEGIES:
        result = racecheck.explore(PROGRAMS[name], strategy=strategy, schedules=60, max_steps=20_000,
                                   **OPTIONS.get(name, {}))
        out.append({"program": name, "strategy": strategy, "verdict": result.summary().splitlines()[0],
                    "trace": result.failure.trace if result.failure else "",
                    "races": [race.describe() for race in result.data_races], "sampled": result.sampled})
    return out


if __name__ == "__main__":
    for program in sys.argv[1:]:
        for line in verdicts(program):
            print(json.dumps(line), flush=True)
