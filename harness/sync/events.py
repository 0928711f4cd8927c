"""Event, Semaphore, BoundedSemaphore and Barrier, with the stdlib's observable semantics.

* Event: a waiter woken by ``set`` returns True even if the flag is cleared again before it runs (the stdlib
  notifies under the condition); set/clear/is_set/wait are points.
* Semaphore: acquire is a point that blocks while the value is 0; release is traced but is not a point (like a
  lock release, it only enables others).
* Barrier: the stdlib's state machine (filling, draining, resetting, broken). The arrival index is read after the
  scheduling point, so two threads can never both get index 0; reset and abort make waiters raise
  BrokenBarrierError; a timeout or a failing action breaks the barrier.
"""

from __future__ import annotations

import threading as _real_threading
from typing import Any

from racecheck import runtime
from racecheck.runtime import RunContract
from racecheck.runtime.access import ACQUIRE, READ, RELEASE, WAIT, WRITE, on
from racecheck.runtime.steps import ObjKind
from racecheck.sync.primitive import Primitive, attempt, wait_timeout

__racecheck_engine__ = True

_real_Event = _real_threading.Event
_real_Semaphore = _real_threading.Semaphore
_real_BoundedSemaphore = _real_threading.BoundedSemaphore
_real_Barrier = _real_threading.Barrier
BrokenBarrierError = _real_threading.BrokenBarrierError


class ControlledEvent(Primitive):
    _kind = "Event"
    _obj_kind = ObjKind.EVENT

    def __init__(self, run: RunContract) -> None:
        super().__init__(run)
        self._flag = False
        self._sets = 0  # how many times set() woke waiters: a waiter woken by a set returns True

    def _accesses(self) -> None:
        name = self._obj
        self._read_access, self._write_access, self._wait_access = on(name, READ), on(name, WRITE), on(name, WAIT)

    def is_set(self) -> bool:
        self._run.schedule(f"is_set {self._name}", access=self._read_access, skip=1)
        return self._flag

    isSet = is_set  # noqa: N815

    def set(self) -> None:
        self._run.schedule(f"set {self._name}", access=self._write_access, skip=1)
        self._flag = True
        self._sets += 1

    def clear(self) -> None:
        self._run.schedule(f"clear {self._name}", access=self._write_access, skip=1)
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        sets = self._sets
        # The count is read before the point, in the step the thread is running: that step reads the event too.
        self._run.touch(self._read_access)
        woken = lambda: self._flag or self._sets != sets  # noqa: E731
        attempt(self._run, f"wait {self._name}", woken, wait_timeout(timeout), self._wait_access)
        return woken()


class ControlledSemaphore(Primitive):
    _kind = "Semaphore"
    _obj_kind = ObjKind.SEMAPHORE

    def __init__(self, run: RunContract, value: int = 1, bound: int | None = None) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        super().__init__(run)
        self._value = value
        self._bound = bound

    def _accesses(self) -> None:
        self._acquire_access, self._release_access = on(self._obj, ACQUIRE), on(self._obj, RELEASE)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        wait = 0.0 if not blocking else wait_timeout(timeout)
        ok = attempt(self._run, f"acquire {self._name}", lambda: self._value > 0, wait, self._acquire_access)
        if ok:
            self._value -= 1
        return ok

    __enter__ = acquire

    def release(self, n: int = 1) -> None:
        if n < 1:
            raise ValueError("n must be one or more")
        self._run.caller_record()
        if self._bound is not None and self._value + n > self._bound:
            raise ValueError("Semaphore released too many times")
        self._value += n
        self._run.note(f"release {self._name}", skip=1, access=self._release_access)

    def __exit__(self, *exc: Any) -> None:
        self.release()


class ControlledBoundedSemaphore(ControlledSemaphore):
    _kind = "BoundedSemaphore"

    def __init__(self, run: RunContract, value: int = 1) -> None:
        super().__init__(run, value, bound=value)


_FILLING, _DRAINING, _RESETTING, _BROKEN = 0, 1, -1, -2


class ControlledBarrier(Primitive):
    _kind = "Barrier"
    _obj_kind = ObjKind.BARRIER

    def __init__(self, run: RunContract, parties: int, action: Any = None, timeout: float | None = None) -> None:
        super().__init__(run)
        self._parties = parties
        self._action = action
        self._timeout = timeout
        self._state = _FILLING
        self._count = 0

    def _accesses(self) -> None:
        name = self._obj
        self._arrive_access, self._wait_access, self._write_access = on(name, ACQUIRE), on(name, WAIT), on(name, WRITE)
        self._release_access = on(name, RELEASE)

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            timeout = self._timeout
        # Entering: blocks while the previous cycle drains or a reset completes (the stdlib's _enter).
        entering = lambda: self._state not in (_DRAINING, _RESETTING)  # noqa: E731
        self._run.schedule(f"arrive {self._name}", access=self._arrive_access, enabled=entering, skip=1)
        if self._state < 0:
            raise BrokenBarrierError
        index = self._count
        self._count += 1
        try:
            if index + 1 == self._parties:
                self._release()
            else:
                self._wait(timeout)
            return index
        finally:
            self._count -= 1
            self._exit()

    def _release(self) -> None:
        try:
            if self._action is not None:
                self._action()
            self._state = _DRAINING
            self._run.note(f"release {self._name}", skip=1, access=self._release_access)
        except BaseException:
            self._break()
            raise

    def _wait(self, timeout: float | None) -> None:
        ok = attempt(
            self._run, f"wait {self._name}", lambda: self._state != _FILLING, wait_timeout(timeout), self._wait_access
        )
        if not ok:
            self._break()
            raise BrokenBarrierError
        if self._state < 0:
            raise BrokenBarrierError

    def _exit(self) -> None:
        if self._count == 0 and self._state in (_RESETTING, _DRAINING):
            self._state = _FILLING

    def _break(self) -> None:
        self._state = _BROKEN

    def reset(self) -> None:
        self._run.schedule(f"reset {self._name}", access=self._write_access, skip=1)
        if self._count > 0:
            if self._state == _FILLING:
                self._state = _RESETTING
            elif self._state == _BROKEN:
                self._state = _RESETTING
        else:
            self._state = _FILLING

    def abort(self) -> None:
        self._run.schedule(f"abort {self._name}", access=self._write_access, skip=1)
        self._break()

    @property
    def parties(self) -> int:
        return self._parties

    @property
    def n_waiting(self) -> int:
        return self._count if self._state == _FILLING else 0

    @property
    def broken(self) -> bool:
        return self._state == _BROKEN


def Event() -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledEvent(run) if run is not None else _real_Event()


def Semaphore(value: int = 1) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledSemaphore(run, value) if run is not None else _real_Semaphore(value)


def BoundedSemaphore(value: int = 1) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledBoundedSemaphore(run, value) if run is not None else _real_BoundedSemaphore(value)


def Barrier(parties: int, action: Any = None, timeout: float | None = None) -> Any:  # noqa: N802
    run = runtime.current_run()
    if run is None:
        return _real_Barrier(parties, action, timeout)
    return ControlledBarrier(run, parties, action, timeout)
