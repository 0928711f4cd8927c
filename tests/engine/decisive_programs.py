"""Racy programs whose failure one pair of accesses decides (and one where only two pairs together do), each with
the object that pair must be on: the racing pair is checked against them under every strategy
(``test_decisive_pair.py``). Plain ``threading`` and ``concurrent.futures``, no ``racecheck.point``."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor


class Tally:
    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> None:
        self.count += 1


def pool_lost_update() -> None:
    """Two increments of ``count`` through an executor: one is lost."""
    tally = Tally()
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(tally.bump) for _ in range(2)]:
            future.result()
    assert tally.count == 2, tally.count


class Stats:
    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def add(self, x: int) -> None:
        self.count += 1
        self.total += x


def total_not_count() -> None:
    """``count`` and ``total`` both race; the check reads ``total``, so the pair is on ``total``."""
    stats = Stats()
    with ThreadPoolExecutor(2) as pool:
        for x in (1, 2):
            pool.submit(stats.add, x)
    assert stats.total == 3, stats.total


class TTLCache:
    def __init__(self, clock) -> None:
        self._values: dict = {}
        self._expires: dict = {}
        self.clock = clock

    def get(self, key, load):
        if self._expires.get(key, -1.0) < self.clock():
            self._values[key] = load(key)
            self._expires[key] = self.clock() + 60
        return self._values[key]


def ttl_cache_loads_twice() -> None:
    """Two readers of a cold entry both load it: the pair is on the entry of ``_expires``, not on the test's list."""
    loads = []

    def load(key):
        loads.append(key)
        return key.upper()

    cache = TTLCache(time.monotonic)
    readers = [threading.Thread(target=cache.get, args=("a", load)) for _ in range(2)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    assert len(loads) == 1, loads


_CONFIG_LOCK = threading.Lock()  # made at import: a real lock, not one the run made
_CONFIG: dict = {}


def _set_port(port: int) -> None:
    with _CONFIG_LOCK:
        _CONFIG["port"] = port


def locked_writer_unlocked_reader() -> None:
    """A writer under a module-level lock, a reader without it: the pair is the write and the read of ``port``."""
    _CONFIG.clear()
    seen = []
    writer = threading.Thread(target=_set_port, args=(8080,))
    reader = threading.Thread(target=lambda: seen.append(_CONFIG.get("port")))
    writer.start()
    reader.start()
    writer.join()
    reader.join()
    assert seen == [8080], seen


def two_leaked_files() -> None:
    """A writer makes two files while a cleaner lists the folder once and removes what it listed; the check wants
    the folder empty. With the cleaner's listing first, both files leak: moving the listing after the second file's
    creation moves it after the first's too (the writer made them in that order), and after the first's alone the
    second still leaks, so no single swap fixes it, and the report says which pairs do together."""
    import os
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="racecheck-two-leaks-")
    try:
        def writer() -> None:
            for name in ("a", "b"):
                with open(os.path.join(folder, name), "w"):
                    pass

        def cleaner() -> None:
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))

        threads = [threading.Thread(target=writer), threading.Thread(target=cleaner)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        left = sorted(os.listdir(folder))
        assert not left, f"leaked {left}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# program -> (the object text its pair is on ends with, the kinds one side must have)
DECIDED = {
    pool_lost_update: "Tally#1.count",
    total_not_count: "Stats#1.total",
    ttl_cache_loads_twice: "['a']",
    locked_writer_unlocked_reader: "dict#1['port']",
}
