"""Condition: wait releases the lock, blocks until notified (or the virtual timeout passes), then re-acquires it,
each a scheduling point; notify is traced but is not a point. ``wait_for`` is the stdlib's loop, step for step,
so a timeout of 0 still releases the lock once, as the stdlib does."""

from __future__ import annotations

import threading as _real_threading
from collections import deque
from typing import Any

from racecheck import runtime
from racecheck.runtime import RunContract
from racecheck.runtime.access import NOTIFY, WAIT, on
from racecheck.runtime.steps import ObjKind
from racecheck.sync.locks import ControlledRLock
from racecheck.sync.primitive import Primitive, attempt, wait_timeout

__racecheck_engine__ = True

_real_Condition = _real_threading.Condition


class _Waiter:
    __slots__ = ("notified",)

    def __init__(self) -> None:
        self.notified = False


class ControlledCondition(Primitive):
    _kind = "Condition"
    _obj_kind = ObjKind.CONDITION

    def __init__(self, run: RunContract, lock: Any = None, name: str | None = None) -> None:
        super().__init__(run, name)
        self._lock = lock if lock is not None else ControlledRLock(run, name=self._obj)
        self._waiters: deque[_Waiter] = deque()
        self.acquire = self._lock.acquire
        self.release = self._lock.release

    def _accesses(self) -> None:
        self._wait_access, self._notify_access = on(self._obj, WAIT), on(self._obj, NOTIFY)

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        waiter = _Waiter()
        self._waiters.append(waiter)
        saved = self._lock._release_save()
        try:
            notified = attempt(
                self._run, f"wait {self._name}", lambda: waiter.notified, wait_timeout(timeout), self._wait_access
            )
        finally:
            if not waiter.notified:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            if not self._run.aborting:
                self._lock._acquire_restore(saved)
        return notified

    def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
        endtime = None
        waittime = timeout
        result = predicate()
        while not result:
            if waittime is not None:
                if endtime is None:
                    endtime = self._run.now() + waittime
                else:
                    waittime = endtime - self._run.now()
                    if waittime <= 0:
                        break
            self.wait(waittime)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._lock._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        woken = 0
        while self._waiters and woken < n:
            self._waiters.popleft().notified = True
            woken += 1
        self._run.note(f"notify {self._name} ({woken} woken)", skip=1, access=self._notify_access)

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all  # noqa: N815 - stdlib alias


def Condition(lock: Any = None) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledCondition(run, lock) if run is not None else _real_Condition(lock)
