"""Lock and RLock: acquire is a scheduling point that blocks while another thread holds the lock; release is
traced but is not a point (it only enables others; everything since the previous point happened inside the
critical section, so no interleaving is lost)."""

from __future__ import annotations

import sys
import threading as _real_threading
from typing import Any

from racecheck import runtime
from racecheck.runtime import RunContract
from racecheck.runtime.access import ACQUIRE, READ, RELEASE, exclusive_acquire, on, watched_acquire
from racecheck.runtime.watched_code import CODES as _WATCHED
from racecheck.sync.primitive import Primitive, attempt

_state = runtime.thread_state  # ``_state.thread``: the calling thread's record, read without a call (hot path)

__racecheck_engine__ = True

_real_Lock = _real_threading.Lock
_real_RLock = _real_threading.RLock


def _lock_timeout(blocking: bool, timeout: float) -> float | None:
    """The stdlib's argument rules for Lock/RLock.acquire: -1 waits forever, other negatives are an error."""
    if not blocking:
        if timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0.0
    if timeout == -1:
        return None
    if timeout < 0:
        raise ValueError("timeout value must be a non-negative number")
    return float(timeout)


class _LockAccesses(Primitive):
    def _accesses(self) -> None:
        self._acquire_access = exclusive_acquire(self._obj)  # blocks while another thread holds it
        self._try_access = on(self._obj, ACQUIRE)  # a try or a timeout: may return False while it is held
        self._release_access = on(self._obj, RELEASE)
        self._watched_access = watched_acquire(self._obj)  # from code whose memory is watched (a blocking one)

    def _blocking_access(self) -> tuple:
        """What a blocking acquire records: its caller's (two frames up) code watched or not."""
        return self._watched_access if sys._getframe(2).f_code in _WATCHED else self._acquire_access


class ControlledLock(_LockAccesses):
    _kind = "Lock"

    def __init__(self, run: RunContract, name: str | None = None) -> None:
        super().__init__(run, name)
        self._owner: Any = None
        self._held = False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if blocking and timeout == -1:  # the common case, a wait as long as it takes: one call less (hot path)
            self._run.schedule(f"acquire {self._name}", access=self._blocking_access(), enabled=self._is_free,
                               skip=1)
        else:
            wait = _lock_timeout(blocking, timeout)
            verb = "try-acquire" if wait == 0 else "acquire"
            if not attempt(self._run, f"{verb} {self._name}", self._is_free, wait, self._try_access):
                return False
        self._held = True
        self._owner = _state.thread
        return True

    def _is_free(self) -> bool:
        return not self._held

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("release unlocked lock")
        # a thread outside the run raises, one unwinding stops here
        self._run.effect(f"release {self._name}", skip=1, access=self._release_access)
        self._held = False
        self._owner = None

    def locked(self) -> bool:
        return self._run.touch(on(self._obj, READ)) or self._held  # what it returns depends on every acquire/release

    __enter__ = acquire

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # Condition support (same protocol as the stdlib's private hooks)
    def _release_save(self) -> Any:
        self.release()

    def _acquire_restore(self, state: Any) -> None:
        self.acquire()

    def _is_owned(self) -> bool:
        return self._held  # a plain Lock has no owner: the stdlib's Condition treats "locked" as "owned"


class ControlledRLock(_LockAccesses):
    _kind = "RLock"

    def __init__(self, run: RunContract, name: str | None = None) -> None:
        super().__init__(run, name)
        self._owner: Any = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = _state.thread
        if blocking and timeout == -1:  # the common case, a wait as long as it takes: one call less (hot path)
            self._run.schedule(
                f"acquire {self._name}", access=self._blocking_access(),
                enabled=lambda: self._owner is None or self._owner is me, skip=1,
            )
        else:
            wait = _lock_timeout(blocking, timeout)
            verb = "try-acquire" if wait == 0 else "acquire"
            free = lambda: self._owner is None or self._owner is me  # noqa: E731
            if not attempt(self._run, f"{verb} {self._name}", free, wait, self._try_access):
                return False
        self._owner = me
        self._count += 1
        return True

    def release(self) -> None:
        if self._owner is not _state.thread or self._count == 0:
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            self._owner = None
        self._run.note(f"release {self._name}", skip=1, access=self._release_access)

    __enter__ = acquire

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _is_owned(self) -> bool:
        return self._owner is _state.thread

    def _release_save(self) -> Any:
        if not self._is_owned():
            raise RuntimeError("cannot release un-acquired lock")
        state = (self._count, self._owner)
        self._count = 0
        self._owner = None
        self._run.note(f"release {self._name}", skip=1, access=self._release_access)
        return state

    def _acquire_restore(self, state: Any) -> None:
        count, owner = state
        self._run.schedule(
            f"acquire {self._name}", access=self._acquire_access, enabled=lambda: self._owner is None, skip=1
        )
        self._owner = owner
        self._count = count


def Lock() -> Any:  # noqa: N802 - stdlib name
    run = runtime.current_run()
    return ControlledLock(run) if run is not None else _real_Lock()


def RLock(*args: Any, **kwargs: Any) -> Any:  # noqa: N802
    run = runtime.current_run()
    return ControlledRLock(run) if run is not None else _real_RLock(*args, **kwargs)
