"""Programs for the data-race tests (tests/search/test_data_races.py): unordered accesses, and the same accesses
ordered by each kind of synchronisation. Kept in a module of their own so their memory is watched."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor


class Box:
    def __init__(self) -> None:
        self.value = 0
        self.ready = False


class Stats:
    def __init__(self) -> None:
        self.hits = 0


MODULE_LOCK = threading.Lock()  # made before any run: a real lock, whose critical sections still order


def _both(work) -> None:
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def counter() -> None:
    """Two threads increment one counter with no lock; the test asserts nothing."""
    box = Box()

    def inc() -> None:
        box.value += 1  # the racing line

    _both(inc)


def locked_counter() -> None:
    box = Box()
    lock = threading.Lock()

    def inc() -> None:
        with lock:
            box.value += 1

    _both(inc)
    assert box.value == 2


def module_locked_counter() -> None:
    box = Box()

    def inc() -> None:
        with MODULE_LOCK:
            box.value += 1

    _both(inc)


def two_races() -> None:
    """A counter race and a statistics race (the second one intended, in the benign tests)."""
    box, stats = Box(), Stats()

    def work() -> None:
        stats.hits += 1
        box.value += 1

    _both(work)


def lost_update() -> None:
    """The counter race with its assertion: it fails in some schedules."""
    box = Box()

    def inc() -> None:
        value = box.value
        box.value = value + 1

    _both(inc)
    assert box.value == 2


def stats_only() -> None:
    stats = Stats()

    def work() -> None:
        stats.hits += 1

    _both(work)


# ----- one hand-off per kind of synchronisation, each ordering a write before a read ------------------------------


def by_lock() -> None:
    box, lock = Box(), threading.Lock()

    def writer() -> None:
        with lock:
            box.value = 1
            box.ready = True

    def reader() -> None:
        with lock:
            if box.ready:
                assert box.value == 1

    pair(writer, reader)


def by_queue() -> None:
    box, channel = Box(), queue.Queue()

    def writer() -> None:
        box.value = 1
        channel.put("done")

    def reader() -> None:
        channel.get()
        box.value += 1

    pair(writer, reader)


def by_event() -> None:
    box, done = Box(), threading.Event()

    def writer() -> None:
        box.value = 1
        done.set()

    def reader() -> None:
        done.wait()
        box.value += 1

    pair(writer, reader)


def by_condition() -> None:
    box, cond = Box(), threading.Condition()

    def writer() -> None:
        with cond:
            box.value = 1
            box.ready = True
            cond.notify_all()

    def reader() -> None:
        with cond:
            while not box.ready:
                cond.wait()
            box.value += 1

    pair(writer, reader)


def by_start_join() -> None:
    box = Box()
    box.value = 1  # before the start

    def worker() -> None:
        box.value += 1

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    box.value += 1  # after the join


def by_future() -> None:
    box = Box()
    box.value = 1  # before the submit

    def work() -> int:
        box.value += 1
        return box.value

    with ThreadPoolExecutor(max_workers=2) as pool:
        future = pool.submit(work)
        future.result()
        box.value += 1  # after the result


def pool_counter() -> None:
    """Two work items on a pool add to one counter with no lock, around a sleep and a poll of an event."""
    import time

    box, never = Box(), threading.Event()

    def work() -> None:
        time.sleep(0.01)
        never.wait(0)
        box.value += 1

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(work), pool.submit(work)]:
            future.result()


def by_real_lock() -> None:
    box = Box()

    def writer() -> None:
        with MODULE_LOCK:
            box.value = 1
            box.ready = True

    def reader() -> None:
        with MODULE_LOCK:
            if box.ready:
                box.value += 1

    pair(writer, reader)


def pair(writer, reader) -> None:
    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


ORDERED = {
    "lock": by_lock, "queue": by_queue, "event": by_event, "condition": by_condition,
    "start-join": by_start_join, "future": by_future, "real-lock": by_real_lock,
}


def file_writers() -> None:
    """Two threads write one file of the fake filesystem, with nothing ordering them."""
    import racecheck.fakefs

    path = racecheck.fakefs.root() + "/state.json"

    def write(text: str) -> None:
        with open(path, "w") as handle:  # the racing open
            handle.write(text)

    pair(lambda: write("a"), lambda: write("b"))


def locked_file_writers() -> None:
    import racecheck.fakefs

    path = racecheck.fakefs.root() + "/state.json"
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            with open(path, "w") as handle:
                handle.write(text)

    pair(lambda: write("a"), lambda: write("b"))
