"""Bringing ``threading.Thread`` under control without replacing the class.

Code under test may subclass ``threading.Thread`` at import time, long before any run, so swapping the name is not
enough. Instead, for the duration of an exploration, ``Thread.start``, ``join`` and ``is_alive`` are wrapped: when
the caller is a controlled thread, the new thread joins the caller's run and join/is_alive follow the scheduler's
view; for every other caller the original methods run unchanged. Thread default names ("Thread-N") come from a
per-run counter so they do not depend on how many threads the process created before, and ``Thread.ident`` /
``native_id`` read, for a controlled caller asking about a thread of its run, the logical ident T<n> gets from
``threading.get_ident()`` there, never the OS value (which differs in every process).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.control import handoff
from racecheck.control.external import is_plumbing
from racecheck.runtime.access import JOIN, on_thread

__racecheck_engine__ = True

_Thread = threading.Thread
_orig_start = _Thread.start
_orig_join = _Thread.join
_orig_is_alive = _Thread.is_alive
_orig_newname = getattr(threading, "_newname", None)
_orig_ident = _Thread.__dict__["ident"]
_orig_native_id = _Thread.__dict__.get("native_id")

LOGICAL_IDENT_BASE = 0x5A5A0000  # T<n> reads threading.get_ident() == LOGICAL_IDENT_BASE + n inside a run


def logical_ident(rec: Any) -> int:
    return LOGICAL_IDENT_BASE + rec.tid


def _start(self: Any) -> None:
    run = runtime.thread_state.run
    if run is None or getattr(self, "_racecheck_record", None) is not None or is_plumbing(self):
        return _orig_start(self)
    target = getattr(self, "_target", None)
    handed = (*getattr(self, "_args", ()), *getattr(self, "_kwargs", {}).values())
    runtime.reach(target if target is not None else self, handed)  # its code, watched from its first step
    run.start_thread(self, _orig_start)
    if target is not None and run.watch is not None:
        # A target racecheck does not watch (a builtin such as ``out.append``, the standard library's code) records
        # nothing by itself: two such threads would commute and dpor prove their race absent. Run through the
        # hand-off's stand-in, its call hands its arguments and bound object over, as watched code calling it does.
        # Swapped after the start (its first step cannot run before this thread's next point), so the thread's
        # location stays the target's own. (``_target`` is threading's attribute, set by name as it is read above.)
        setattr(self, "_target", handoff.stand_in(target, getattr(target, "__self__", None)))  # noqa: B010


def _record_in_current_run(thread: Any) -> Any:
    rec = getattr(thread, "_racecheck_record", None)
    run = runtime.thread_state.run
    if rec is None or run is None or rec.run is not run:
        return None
    return rec


def _join(self: Any, timeout: float | None = None) -> None:
    rec = _record_in_current_run(self)
    if rec is None:
        return _orig_join(self, timeout)
    if rec is runtime.thread_state.thread:
        raise RuntimeError("cannot join current thread")
    if not rec.launched:
        raise RuntimeError("cannot join thread before it is started")
    wait = None if timeout is None else max(float(timeout), 0.0)
    rec.run.schedule(f"join T{rec.tid}", access=on_thread(rec.tid, JOIN), enabled=lambda: rec.finished, timeout=wait)


def _is_alive(self: Any) -> bool:
    rec = _record_in_current_run(self)
    if rec is None:
        return _orig_is_alive(self)
    return rec.launched and not rec.finished


def _virtual(original: property) -> property:
    def read(self: Any) -> Any:
        real = original.fget(self)
        rec = _record_in_current_run(self)
        return real if rec is None or real is None else logical_ident(rec)

    return property(read, doc=original.__doc__)


def _newname(name_template: str = "Thread-%d") -> str:
    run = runtime.current_run()
    if run is None or _orig_newname is None:
        return _orig_newname(name_template) if _orig_newname else name_template
    count = run.resources.get("_thread_names", 0) + 1
    run.resources["_thread_names"] = count
    return name_template % count


@contextmanager
def controlled_thread_class() -> Iterator[None]:
    """Wrap Thread.start/join/is_alive (and default naming) for the duration of the block."""
    _Thread.start = _start
    _Thread.join = _join
    _Thread.is_alive = _is_alive
    _Thread.ident = _virtual(_orig_ident)
    if _orig_native_id is not None:
        _Thread.native_id = _virtual(_orig_native_id)
    if _orig_newname is not None:
        threading._newname = _newname
    try:
        yield
    finally:
        _Thread.start = _orig_start
        _Thread.join = _orig_join
        _Thread.is_alive = _orig_is_alive
        _Thread.ident = _orig_ident
        if _orig_native_id is not None:
            _Thread.native_id = _orig_native_id
        if _orig_newname is not None:
            threading._newname = _orig_newname
