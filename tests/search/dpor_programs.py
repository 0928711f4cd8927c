"""Small generated programs for the differential test of dpor against unbounded dfs (test_dpor_engine.py).

A program is a tuple of threads, each a tuple of operations on objects the test function makes afresh in every
schedule: two locks, a queue, an event, a future, plain shared memory behind named points, and files on the fake
filesystem. Every value an operation sees is written to its thread's own list; the test function ends by putting
together what every thread saw and what state is left (the *outcome*) and fails its oracle for some outcomes, so a
program fails in some interleavings and not in others. Shared plain memory is touched only next to a bare
``racecheck.point()``, which is what the reduction assumes (docs/dependency.md).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout

import racecheck
import racecheck.fakefs

LOCK_OPS = ("inc0", "inc1", "nested", "try_inc0", "inc0_timed", "sem_inc")
QUEUE_OPS = ("put", "get_nowait", "get_timed")
EVENT_OPS = ("set", "is_set", "wait_timed", "clear")
FUTURE_OPS = ("set_result", "result_timed")
MEMORY_OPS = ("rw_a", "rw_b")
FILE_OPS = ("write_a", "write_b", "read_a", "remove_a", "rename_ab", "exists_b", "listdir", "write_own")
BLOCKING_OPS = ("get", "wait", "result")  # may wait for good: a deadlock is one of the failures compared
ALL_OPS = LOCK_OPS + QUEUE_OPS + EVENT_OPS + FUTURE_OPS + MEMORY_OPS + FILE_OPS + BLOCKING_OPS


def _digest(value: object) -> int:
    return int(hashlib.sha256(repr(value).encode()).hexdigest()[:8], 16)


class World:
    """The objects of one schedule: made inside the run, so they are controlled."""

    def __init__(self, uses_files: bool) -> None:
        self.locks = (threading.Lock(), threading.Lock())
        self.semaphore = threading.Semaphore(2)  # two holders at once: an acquire another holder need not block
        self.queue = queue.Queue()
        self.event = threading.Event()
        self.future: Future = Future()
        self.memory = {"a": 0, "b": 0, "n": 0}
        self.root = ""
        if uses_files:
            self.root = racecheck.fakefs.root() + "/d"
            os.makedirs(self.root, exist_ok=True)

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"


def perform(world: World, op: str, tid: int, seen: list) -> None:  # noqa: C901 - one branch per operation
    """Thread ``tid`` does ``op``; what it sees goes into ``seen`` (its own list)."""
    if op in ("inc0", "inc1"):
        with world.locks[int(op[-1])]:
            racecheck.point("inc")
            world.memory["n"] = world.memory["n"] * 3 + tid
    elif op in ("try_inc0", "inc0_timed"):  # may give up while another thread holds the lock
        lock = world.locks[0]
        if lock.acquire(blocking=False) if op == "try_inc0" else lock.acquire(timeout=1):
            try:
                racecheck.point("inc")
                world.memory["n"] = world.memory["n"] * 3 + tid
            finally:
                lock.release()
        else:
            seen.append("busy")
    elif op == "sem_inc":
        with world.semaphore:
            racecheck.point("inc")
            world.memory["n"] = world.memory["n"] * 3 + tid
    elif op == "nested":
        with world.locks[0]:
            with world.locks[1]:
                racecheck.point("nested")
                seen.append(world.memory["n"])
    elif op == "put":
        world.queue.put(tid)
    elif op == "get_nowait":
        try:
            seen.append(world.queue.get_nowait())
        except queue.Empty:
            seen.append("empty")
    elif op == "get_timed":
        try:
            seen.append(world.queue.get(timeout=1))
        except queue.Empty:
            seen.append("timed out")
    elif op == "get":
        seen.append(world.queue.get())
    elif op == "set":
        world.event.set()
    elif op == "clear":
        world.event.clear()
    elif op == "is_set":
        seen.append(world.event.is_set())
    elif op == "wait_timed":
        seen.append(world.event.wait(timeout=1))
    elif op == "wait":
        seen.append(world.event.wait())
    elif op == "set_result":
        try:
            world.future.set_result(tid)
        except InvalidStateError:
            seen.append("already set")
    elif op == "result_timed":
        try:
            seen.append(world.future.result(timeout=1))
        except FutureTimeout:
            seen.append("no result")
    elif op == "result":
        seen.append(world.future.result())
    elif op in ("rw_a", "rw_b"):
        key = op[-1]
        racecheck.point("rw")
        value = world.memory[key]
        world.memory[key] = value * 2 + tid
        seen.append(value)
    elif op in ("write_a", "write_b", "write_own"):
        name = f"own{tid}" if op == "write_own" else op[-1]
        with open(world.path(name), "w") as handle:
            handle.write(str(tid))
    elif op == "read_a":
        try:
            with open(world.path("a")) as handle:
                seen.append(handle.read())
        except FileNotFoundError:
            seen.append("missing")
    elif op == "remove_a":
        try:
            os.remove(world.path("a"))
        except FileNotFoundError:
            seen.append("missing")
    elif op == "rename_ab":
        try:
            os.replace(world.path("a"), world.path("b"))
        except FileNotFoundError:
            seen.append("missing")
    elif op == "exists_b":
        seen.append(os.path.exists(world.path("b")))
    elif op == "listdir":
        seen.append(sorted(os.listdir(world.root)))
    else:
        raise ValueError(op)


def uses_files(program: tuple) -> bool:
    return any(op in FILE_OPS for thread in program for op in thread)


def make_test(program: tuple, fail_one_in: int = 3):
    """The test function of ``program``: threads run their operations, then the outcome is put together, kept in
    the run's resources (``outcome``) for the differential test, and checked by an oracle that fails for about one
    outcome in ``fail_one_in``."""
    files = uses_files(program)

    def test() -> None:
        world = World(files)
        seen: list[list] = [[] for _ in program]

        def body(tid: int) -> None:
            for op in program[tid]:
                perform(world, op, tid + 1, seen[tid])

        threads = [threading.Thread(target=body, args=(tid,)) for tid in range(len(program))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        left = []
        if files:
            left = [(name, open(world.path(name)).read()) for name in sorted(os.listdir(world.root))]
        outcome = (seen, dict(world.memory), left)
        racecheck.runtime.current_run().resources["outcome"] = repr(outcome)
        assert _digest(outcome) % fail_one_in, f"the oracle refuses outcome {outcome!r}"

    test.__name__ = f"program_{_digest(program):08x}"
    return test
