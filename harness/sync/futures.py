"""concurrent.futures.Future, wait and as_completed under control.

Our ``Future`` is a real ``concurrent.futures.Future`` whose condition is controlled when created inside a run:
every stdlib method (result, done, cancel, set_result, callbacks) goes through ``self._condition``, so each becomes
a scheduling point without re-implementing the protocol. ``wait``/``as_completed`` block on a predicate over the
futures' states; ``as_completed`` yields the futures already finished first, then each as it completes.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures._base as _futures_base
from typing import Any

from racecheck import runtime
from racecheck.runtime import RunContract
from racecheck.runtime.access import WAIT, Access
from racecheck.runtime.steps import Obj, ObjKind
from racecheck.sync.conditions import ControlledCondition
from racecheck.sync.primitive import attempt

__racecheck_engine__ = True

_RealFuture = concurrent.futures.Future
_real_wait = concurrent.futures.wait
_real_as_completed = concurrent.futures.as_completed
_FIRST_COMPLETED = concurrent.futures.FIRST_COMPLETED
_FIRST_EXCEPTION = concurrent.futures.FIRST_EXCEPTION
_ALL_COMPLETED = concurrent.futures.ALL_COMPLETED
_DONE_STATES = ("CANCELLED_AND_NOTIFIED", "FINISHED")


_PENDING = _futures_base.PENDING


def _plain_fields() -> bool:
    """Whether the stdlib's ``Future.__init__`` sets exactly the fields ``Future`` sets itself inside a run."""
    sample = _RealFuture()
    return set(vars(sample)) == {"_condition", "_state", "_result", "_exception", "_waiters", "_done_callbacks"} and (
        sample._state == _PENDING and sample._result is None and sample._exception is None
        and sample._waiters == [] and sample._done_callbacks == []
    )


_OWN_INIT = _plain_fields()


class Future(_RealFuture):
    """A real Future whose condition is controlled when it is created by a controlled thread."""

    def __init__(self) -> None:
        run = runtime.thread_state.run
        if run is None or not _OWN_INIT:
            super().__init__()
            if run is not None:
                self._condition = ControlledCondition(run, name=_condition_obj(run))
            return
        # The stdlib's fields without its real Condition, which would be replaced at once (a Condition, an RLock
        # and a deque per future, a large part of the cost of a submit); checked at import.
        self._condition = ControlledCondition(run, name=_condition_obj(run))
        self._state = _PENDING
        self._result = None
        self._exception = None
        self._waiters: list[Any] = []
        self._done_callbacks: list[Any] = []

    def __racecheck_obj__(self, run: RunContract) -> Obj | None:
        """A future's operations touch its controlled condition (``Primitive.__racecheck_obj__``): None for one
        made outside a run, whose condition is real."""
        touched = getattr(self._condition, "__racecheck_obj__", None)
        return touched(run) if touched is not None else None


def has_callbacks(future: Any) -> bool:
    """Whether ``future`` has done callbacks to run (code of the program's, run by whoever completes it)."""
    return bool(future._done_callbacks)


def callbacks_of(future: Any) -> list[Any]:
    """The done callbacks ``future`` will run when it completes (a copy)."""
    return list(future._done_callbacks)


def _condition_obj(run: RunContract) -> Obj:
    """A future's condition: the stand-in's own (the program never names it), which its waits and state touch."""
    return Obj(ObjKind.CONDITION, run.new_object_id("Future"), engine=True)


def _waits_on(futures: list[Any], run: RunContract) -> tuple[Access, ...]:
    """A wait on ``futures``: it touches each one's condition, which every change of a future's state goes through
    (a future made outside the run has no controlled condition and names nothing), as the future says
    (``Future.__racecheck_obj__``)."""
    objs = set()
    for future in futures:
        touched = getattr(future, "__racecheck_obj__", None)
        obj = touched(run) if touched is not None else None
        if isinstance(obj, Obj):
            objs.add(obj)
    return tuple(Access(obj, WAIT) for obj in sorted(objs))


def _future_is_done(future: Any) -> bool:
    return future._state in _DONE_STATES


def wait(fs: Any, timeout: float | None = None, return_when: str = _ALL_COMPLETED) -> Any:
    run = runtime.current_run()
    if run is None:
        return _real_wait(fs, timeout, return_when)
    futures = list(dict.fromkeys(fs))

    def satisfied() -> bool:
        done = [f for f in futures if _future_is_done(f)]
        if return_when == _FIRST_COMPLETED:
            return bool(done)
        if return_when == _FIRST_EXCEPTION:
            failed = any(f._state == "FINISHED" and f._exception is not None for f in done)
            return failed or len(done) == len(futures)
        return len(done) == len(futures)

    waits = _waits_on(futures, run)
    attempt(run, "wait futures", satisfied, None if timeout is None else max(float(timeout), 0.0), waits)
    done = {f for f in futures if _future_is_done(f)}
    return _futures_base.DoneAndNotDoneFutures(done, set(futures) - done)


def as_completed(fs: Any, timeout: float | None = None) -> Any:
    run = runtime.current_run()
    if run is None:
        yield from _real_as_completed(fs, timeout)
        return
    pending = list(dict.fromkeys(fs))
    total = len(pending)
    end = None if timeout is None else run.now() + timeout
    while pending:
        remaining = None if end is None else max(end - run.now(), 0.0)
        ok = attempt(run, "as_completed futures", lambda: any(_future_is_done(f) for f in pending), remaining,
                     _waits_on(pending, run))
        if not ok:
            raise concurrent.futures.TimeoutError(f"{len(pending)} (of {total}) futures unfinished")
        ready = [f for f in pending if _future_is_done(f)]
        for future in ready:
            pending.remove(future)
            yield future
