"""Critical sections of real locks: no memory point inside them.

A lock made before the exploration (a library's import-time ``threading.RLock``, such as fsspec's instance-cache
lock) stays a real lock. If a controlled thread holding one stopped at a memory access and another thread then
tried to take it, that thread would block for real, outside racecheck's control: uncontrolled blocking, in code
that is correct. So while a thread holds a real lock, which watched code takes with ``with lock:`` or
``lock.acquire()``, its memory accesses join its running step instead of being points: the critical section runs
as one piece, as it did before memory was watched (docs/control.md says so). Its accesses are still recorded.
"""

from __future__ import annotations

import _thread
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

REAL_LOCKS = (type(_thread.allocate_lock()), _thread.RLock)
_TAKE = frozenset({"acquire", "__enter__"})
_GIVE = frozenset({"release", "__exit__"})
LOCK_METHODS = _TAKE | _GIVE
_state = runtime.thread_state


def _count(change: int, lock: Any) -> None:
    """The calling thread took (+1) or gave back (-1) ``lock``; its run records it, with the thread's point, for the
    data-race report: a critical section of a real lock orders the memory accesses inside it as any lock does."""
    me = _state.thread
    if me is not None:
        me.real_held = max(0, me.real_held + change)
        me.run.real_lock(me, change, lock)


def lock_method(name: str, bound: Any) -> Any:
    """``lock.acquire``/``release`` of a real lock, counted on the calling thread."""
    if name in _TAKE:
        def take(*args: Any, **kwargs: Any) -> Any:
            got = bound(*args, **kwargs)
            if got:
                _count(1, bound.__self__)
            return got

        return take

    def give(*args: Any, **kwargs: Any) -> Any:
        result = bound(*args, **kwargs)
        _count(-1, bound.__self__)
        return result

    return give


class _Held:
    """``with real_lock:`` as watched code runs it: the lock taken and given back, and counted."""

    __slots__ = ("lock",)

    def __init__(self, lock: Any) -> None:
        self.lock = lock

    def __enter__(self) -> Any:
        got = self.lock.__enter__()
        _count(1, self.lock)
        return got

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.lock.__exit__(*exc)
        finally:
            _count(-1, self.lock)


def context(value: Any) -> Any:
    """The hook of a ``with`` statement's context expression (``__rc_cm__``): a real lock is counted while held;
    anything else is itself."""
    if type(value) in REAL_LOCKS and _state.run is not None:
        return _Held(value)
    return value
