"""Correct programs as users write them, each with a racy twin (issue 49): a job queue, a latch, statistics fed by
a pool, a global registry, a TTL cache with a refresher, a shared session, and (with torch) a keep-last-k checkpoint
manager. The correct ones collect results from several threads with ``list.append`` / ``set.add`` outside any lock,
the usual idiom, which CPython makes atomic: ``data_races="fail"`` must pass them and fail every racy twin.
Kept in a module of their own so their memory is watched."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


def _run_all(*targets) -> None:
    threads = [threading.Thread(target=target) for target in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ----- a job queue: consumers wait on a condition -----------------------------------------------------------------


class JobQueue:
    def __init__(self, guarded: bool) -> None:
        self.jobs: list[int] = []
        self.cond = threading.Condition()
        self.guarded = guarded

    def put(self, job: int) -> None:
        with self.cond:
            self.jobs.append(job)
            self.cond.notify_all()

    def take(self) -> int:
        with self.cond:
            if self.guarded:
                while not self.jobs:
                    self.cond.wait()
            elif not self.jobs:  # the racy twin: another consumer may have taken the job it was woken for
                self.cond.wait()
            return self.jobs.pop(0)


def _job_queue(guarded: bool) -> None:
    q = JobQueue(guarded)
    done: list[int] = []

    def consumer() -> None:
        done.append(q.take())

    def producer() -> None:
        q.put(1)
        q.put(2)

    _run_all(consumer, consumer, producer)
    assert sorted(done) == [1, 2]


def job_queue() -> None:
    _job_queue(True)


def job_queue_racy() -> None:
    _job_queue(False)


# ----- a latch --------------------------------------------------------------------------------------------------


class Latch:
    def __init__(self, count: int, locked: bool) -> None:
        self.count = count
        self.cond = threading.Condition()
        self.locked = locked

    def count_down(self) -> None:
        if self.locked:
            with self.cond:
                self.count -= 1
                if self.count == 0:
                    self.cond.notify_all()
        else:  # the racy twin: the decrement outside the lock
            self.count -= 1
            with self.cond:
                self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            while self.count > 0:
                self.cond.wait()


def _latch(locked: bool) -> None:
    latch = Latch(2, locked)
    arrived: list[str] = []

    def worker(name: str) -> None:
        arrived.append(name)
        latch.count_down()

    _run_all(lambda: worker("a"), lambda: worker("b"), latch.wait)
    assert sorted(arrived) == ["a", "b"]


def latch() -> None:
    _latch(True)


def latch_racy() -> None:
    _latch(False)


# ----- statistics fed by a pool: a dataclass and a __slots__ class --------------------------------------------------


@dataclass
class DataStats:
    hits: int = 0
    total: float = 0.0


class SlotStats:
    __slots__ = ("hits", "total")

    def __init__(self) -> None:
        self.hits = 0
        self.total = 0.0


def _stats(stats, locked: bool) -> None:
    lock = threading.Lock()
    seen: set[int] = set()

    def record(value: int) -> int:
        seen.add(value)
        if locked:
            with lock:
                stats.hits += 1
                stats.total += value
        else:
            stats.hits += 1
            stats.total += value
        return value

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(record, [1, 2]))
    assert results == [1, 2] and seen == {1, 2}


def dataclass_stats() -> None:
    _stats(DataStats(), True)


def dataclass_stats_racy() -> None:
    _stats(DataStats(), False)


def slots_stats() -> None:
    _stats(SlotStats(), True)


def slots_stats_racy() -> None:
    _stats(SlotStats(), False)


# ----- a global registry ------------------------------------------------------------------------------------------

_REGISTRY: dict[str, object] = {}
_REGISTRY_LOCK = threading.Lock()  # made at import, before any run: a real lock


def _register(name: str, locked: bool) -> object:
    if locked:
        with _REGISTRY_LOCK:
            if name not in _REGISTRY:
                _REGISTRY[name] = object()
            return _REGISTRY[name]
    if name not in _REGISTRY:  # the racy twin: check-then-act with no lock
        _REGISTRY[name] = object()
    return _REGISTRY[name]


def _registry(locked: bool) -> None:
    _REGISTRY.clear()
    got: list[object] = []
    _run_all(lambda: got.append(_register("db", locked)), lambda: got.append(_register("db", locked)))
    assert got[0] is got[1]


def registry() -> None:
    _registry(True)


def registry_racy() -> None:
    _registry(False)


# ----- a TTL cache with a refresher -------------------------------------------------------------------------------


class TTLCache:
    def __init__(self, locked: bool) -> None:
        self._lock = threading.Lock()
        self._value: dict[str, int] = {"port": 0}
        self._expires = 0.0
        self.locked = locked

    def refresh(self, port: int) -> None:
        if self.locked:
            with self._lock:
                self._value = {"port": port}
                self._expires = time.monotonic() + 5.0
        else:  # the racy twin: writes outside the lock
            self._value = {"port": port}
            self._expires = time.monotonic() + 5.0

    def get(self) -> tuple[int, float]:
        with self._lock:
            return self._value["port"], self._expires


def _ttl(locked: bool) -> None:
    cache = TTLCache(locked)
    reads: list[tuple[int, float]] = []
    _run_all(lambda: cache.refresh(8000), lambda: reads.append(cache.get()), lambda: reads.append(cache.get()))
    assert len(reads) == 2


def ttl_cache() -> None:
    _ttl(True)


def ttl_cache_racy() -> None:
    _ttl(False)


# ----- a shared session object ------------------------------------------------------------------------------------


class Session:
    def __init__(self, locked: bool) -> None:
        self._lock = threading.Lock()
        self.token: str | None = None
        self.logins = 0
        self.sent: list[str] = []
        self.locked = locked

    def _ensure_token(self) -> str:
        if self.token is None:
            self.logins += 1
            self.token = f"t{self.logins}"
        return self.token

    def request(self, path: str) -> None:
        if self.locked:
            with self._lock:
                token = self._ensure_token()
        else:
            token = self._ensure_token()
        self.sent.append(f"{path}?{token}")


def _session(locked: bool) -> None:
    session = Session(locked)
    _run_all(lambda: session.request("/a"), lambda: session.request("/b"))
    assert session.logins == 1, session.logins


def session() -> None:
    _session(True)


def session_racy() -> None:
    _session(False)


# ----- a keep-last-k checkpoint manager over torch.save -------------------------------------------------------------


class KeepLastK:
    def __init__(self, folder: str, k: int, locked: bool) -> None:
        self.folder = folder
        self.k = k
        self.kept: list[str] = []
        self._lock = threading.Lock()
        self.locked = locked

    def save(self, step: int, state: dict) -> None:
        import torch

        path = os.path.join(self.folder, f"step{step}.pt")
        if self.locked:
            with self._lock:
                torch.save(state, path)
                self.kept.append(path)
                self._prune()
        else:  # the racy twin: the list and the files changed with no lock
            torch.save(state, path)
            self.kept.append(path)
            self._prune()

    def _prune(self) -> None:
        while len(self.kept) > self.k:
            os.remove(self.kept.pop(0))


def _checkpoints(locked: bool) -> None:
    import torch

    with tempfile.TemporaryDirectory() as folder:
        manager = KeepLastK(folder, 1, locked)
        _run_all(lambda: manager.save(1, {"w": torch.zeros(1)}), lambda: manager.save(2, {"w": torch.ones(1)}))
        assert sorted(os.listdir(folder)) == sorted(os.path.basename(p) for p in manager.kept)
        assert len(manager.kept) == 1


def checkpoints() -> None:
    _checkpoints(True)


def checkpoints_racy() -> None:
    _checkpoints(False)
