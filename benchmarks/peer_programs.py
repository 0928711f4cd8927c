"""Programs both racecheck and frontrun 0.7 can run, in frontrun's form: a ``setup`` that makes the shared state,
``workers`` that each run on a thread of their own with it, and an ``invariant`` that must hold afterwards.

racecheck runs them as one test function (``as_test``: the threads started and joined, then the invariant asserted);
frontrun runs them through ``frontrun.explore(setup, workers, invariant)`` (``frontrun_side.py``). Neither side has
marks: both must see the plain memory accesses by themselves. Each buggy program has a correct twin.

* ``headline_counter``: frontrun's own first example, rebuilt from its description (a counter whose ``increment``
  reads ``self.value`` into a local and writes it back plus one; two threads; the value must be 2); its twin holds
  a lock across the two lines ("find a race and prove it").
* ``check_then_act``: two threads claim a slot if it is free (``if state.owner is None: state.owner = me``); only
  one may count itself the owner. Twin: the check and the claim under a lock.
* ``dict_lost_update``: two threads move a balance through a dict (``d["n"] = d["n"] + 1``). Twin: under a lock.
* ``lock_order``: the classic deadlock, two locks taken in opposite orders. Twin: the same order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self.lock = threading.Lock()

    def increment(self) -> None:
        temp = self.value
        self.value = temp + 1

    def locked_increment(self) -> None:
        with self.lock:
            temp = self.value
            self.value = temp + 1


class Slot:
    def __init__(self) -> None:
        self.owner: object = None
        self.claims = 0
        self.lock = threading.Lock()

    def claim(self) -> None:
        if self.owner is None:
            self.owner = object()
            self.claims += 1

    def locked_claim(self) -> None:
        with self.lock:
            self.claim()


class Ledger:
    def __init__(self) -> None:
        self.d = {"n": 0}
        self.lock = threading.Lock()

    def add(self) -> None:
        self.d["n"] = self.d["n"] + 1

    def locked_add(self) -> None:
        with self.lock:
            self.add()


class TwoLocks:
    def __init__(self) -> None:
        self.a, self.b = threading.Lock(), threading.Lock()
        self.done = 0

    def forward(self) -> None:
        with self.a, self.b:
            self.done += 1

    def backward(self) -> None:
        with self.b, self.a:
            self.done += 1


@dataclass(frozen=True)
class PeerProgram:
    name: str
    buggy: bool
    setup: Callable[[], Any]
    workers: tuple[Callable[[Any], Any], ...]
    invariant: Callable[[Any], bool]


PROGRAMS = (
    PeerProgram("headline_counter", True, Counter, (Counter.increment, Counter.increment), lambda c: c.value == 2),
    PeerProgram("headline_counter_locked", False, Counter, (Counter.locked_increment, Counter.locked_increment),
                lambda c: c.value == 2),
    PeerProgram("check_then_act", True, Slot, (Slot.claim, Slot.claim), lambda s: s.claims == 1),
    PeerProgram("check_then_act_locked", False, Slot, (Slot.locked_claim, Slot.locked_claim),
                lambda s: s.claims == 1),
    PeerProgram("dict_lost_update", True, Ledger, (Ledger.add, Ledger.add), lambda g: g.d["n"] == 2),
    PeerProgram("dict_lost_update_locked", False, Ledger, (Ledger.locked_add, Ledger.locked_add),
                lambda g: g.d["n"] == 2),
    PeerProgram("lock_order", True, TwoLocks, (TwoLocks.forward, TwoLocks.backward), lambda t: t.done == 2),
    PeerProgram("lock_order_fixed", False, TwoLocks, (TwoLocks.forward, TwoLocks.forward), lambda t: t.done == 2),
)


def as_test(program: PeerProgram) -> Callable[[], None]:
    """The program as one racecheck test function."""

    def test() -> None:
        state = program.setup()
        threads = [threading.Thread(target=worker, args=(state,)) for worker in program.workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert program.invariant(state), f"{program.name}: invariant broken"

    test.__qualname__ = program.name
    return test
