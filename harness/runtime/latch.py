"""A one-shot flag that threads can wait for: the engine's own cheap stand-in for ``threading.Event``.

The scheduler makes two per schedule plus one per controlled thread ("the run is done", "this thread has
exited"), and ``threading.Event`` builds a Condition, a Lock and a waiter deque for each: a visible part of the
fixed cost of a schedule. A latch is one real lock, held until the flag is set. It is only ever set,
never cleared (a run that needs a fresh one, as crash recovery does, makes a new one).
"""

from __future__ import annotations

import _thread

__racecheck_engine__ = True

_allocate = _thread.allocate_lock  # the real primitive, never an instrumented name


class Latch:
    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = _allocate()
        self._lock.acquire()
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        try:
            self._lock.release()
        except RuntimeError:
            pass  # set by two threads at once (the supervisor and a finishing thread): released once is enough

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the flag is set, waiting up to ``timeout`` seconds (forever for None) for it."""
        if self._set:
            return True
        if self._lock.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            try:
                self._lock.release()  # let every other waiter through too
            except RuntimeError:
                pass  # a second, simultaneous set() released it already
            return True
        return self._set
