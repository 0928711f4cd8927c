"""A program touching shared memory in every way the memory hooks record, one kind of access per line, each line
naming the one object it touches (tests/search/test_access_lines.py checks that every access carries its line).
A yield (``time.sleep(0)``) and a point sit between groups of accesses: an access may then be a step of its own or
join the step that runs, and a yield ends a step after its merged accesses (where lines were once one off)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import racecheck

G_COUNT = 0


class Slots:
    __slots__ = ("s_val",)

    def __init__(self) -> None:
        self.s_val = 0


@dataclass
class Stats:
    d_val: int = 0


class Plain:
    def __init__(self) -> None:
        self.a_val = 0
        self.a_list = []


def every_kind() -> None:
    plain, slots, stats = Plain(), Slots(), Stats()
    table = {"k_item": 0}
    items = [0]
    members = set()
    c_cell = 0

    def body() -> None:
        global G_COUNT
        nonlocal c_cell
        time.sleep(0)
        x1 = plain.a_val  # A:a_val
        plain.a_val = x1 + 1  # A:a_val
        x2 = table["k_item"]  # A:k_item
        table["k_item"] = x2 + 1  # A:k_item
        time.sleep(0)
        x3 = G_COUNT  # A:G_COUNT
        G_COUNT = x3 + 1  # A:G_COUNT
        x4 = c_cell  # A:c_cell
        c_cell = x4 + 1  # A:c_cell
        racecheck.point("between")
        slots.s_val += 1  # A:s_val
        stats.d_val += 1  # A:d_val
        items.append(1)  # A:list
        time.sleep(0)
        if "k_item" in table:  # A:k_item
            table.get("k_item")  # A:k_item
        members.add(1)  # A:set
        n = len(items)  # A:list
        for _x in items:  # A:list
            pass
        try:
            del table["k_item"]  # A:k_item
        except KeyError:
            pass
        table["k_item"] = n  # A:k_item
        plain.a_list.append(n)  # A:list
        time.sleep(0)

    threads = [threading.Thread(target=body) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
