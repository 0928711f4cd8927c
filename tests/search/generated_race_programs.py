"""Programs built from a plan (``tests/search/test_online_races.py``): each thread runs a list of operations on
shared boxes, under racecheck's locks, under real locks made before the run, appending to one list (an atomic
addition), setting and reading an event, or none, so that a plan covers every kind of access the data-race finder
orders or checks. Kept in a module of their own so their memory is watched."""

from __future__ import annotations

import threading

REAL_LOCKS = [threading.Lock(), threading.RLock()]  # made before any run: real locks, whose critical sections order
OPS = ("read", "write", "locked", "real", "append", "set", "peek", "point")


class Box:
    def __init__(self) -> None:
        self.value = 0


def _do(op: str, i: int, boxes: list, locks: list, items: list, flag: threading.Event) -> None:
    box = boxes[i % len(boxes)]
    if op == "read":
        _ = box.value
    elif op == "write":
        box.value = box.value + 1
    elif op == "locked":
        with locks[i % len(locks)]:
            box.value += 1
    elif op == "real":
        with REAL_LOCKS[i % len(REAL_LOCKS)]:
            box.value += 1
    elif op == "append":
        items.append(i)
    elif op == "set":
        flag.set()
    elif op == "peek":
        if flag.is_set():
            _ = box.value
    else:
        import racecheck

        racecheck.point("pause")


def program(plan: tuple[tuple[tuple[str, int], ...], ...]):
    """The test function of ``plan``: one thread per entry but the first, which the test function runs itself
    between starting and joining the others."""
    def run() -> None:
        boxes = [Box(), Box()]
        locks = [threading.Lock(), threading.RLock()]
        items: list = []
        flag = threading.Event()

        def work(ops) -> None:
            for op, i in ops:
                _do(op, i, boxes, locks, items, flag)

        threads = [threading.Thread(target=work, args=(ops,)) for ops in plan[1:]]
        for t in threads:
            t.start()
        work(plan[0])
        for t in threads:
            t.join()

    return run
