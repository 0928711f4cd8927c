"""Calls that block on other processes: one traced step, never "uncontrolled blocking".

A controlled thread that waits for another *process* (a DataLoader worker's result on a multiprocessing queue or
pipe, ``connection.wait``, a child's exit, a ``select`` or socket read) is not waiting for any controlled thread:
the other side makes progress on its own. Without help the watchdog sees a thread that makes no scheduling point
and reports uncontrolled blocking. Here such calls, made by a controlled thread, become a scheduling point
("external <call>") followed by the real call, during which the run is marked as waiting outside (the supervisor
counts that as progress); a note records the return. Other controlled threads do not run meanwhile: the caller
keeps the baton, so the order of controlled steps, and hence the token, does not depend on how long the other
process takes.

The wrapped callables are patched on their classes/modules for the duration of an exploration, like
``Thread.start``, and pass straight through for any thread that is not controlled.
"""

from __future__ import annotations

import functools
import multiprocessing.connection
import multiprocessing.queues
import select
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

# (owner, attribute, label): the blocking calls that wait on another process or the network
TARGETS: list[tuple[Any, str, str]] = [
    (subprocess.Popen, "wait", "subprocess wait"),
    (subprocess.Popen, "communicate", "subprocess communicate"),
    (multiprocessing.connection.Connection, "recv", "connection recv"),
    (multiprocessing.connection.Connection, "recv_bytes", "connection recv_bytes"),
    (multiprocessing.connection.Connection, "poll", "connection poll"),
    (multiprocessing.connection, "wait", "connection.wait"),
    (multiprocessing.queues.Queue, "get", "multiprocessing queue get"),
    (select, "select", "select"),
    (socket.socket, "recv", "socket recv"),
    (socket.socket, "recv_into", "socket recv_into"),
    (socket.socket, "accept", "socket accept"),
]


def _wrap(real: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(real)
    def external_call(*args: Any, **kwargs: Any) -> Any:
        run = runtime.current_run()
        me = runtime.current_thread_record()
        if run is None or me is None or getattr(run, "aborting", False) or getattr(run, "outside", 0):
            return real(*args, **kwargs)  # not controlled, unwinding, or nested (communicate calls wait)
        run.schedule(f"external {label}")
        run.outside = getattr(run, "outside", 0) + 1
        try:
            return real(*args, **kwargs)
        finally:
            run.outside -= 1
            run.note(f"returned from {label}")

    external_call._racecheck_real = real  # type: ignore[attr-defined]
    return external_call


@contextmanager
def waiting_outside() -> Iterator[None]:
    """Patch every target for the block; restore the originals afterwards, pass or fail."""
    saved: list[tuple[Any, str, Any]] = []  # (owner, name, what its own __dict__ held, or None if inherited)
    try:
        for owner, name, label in TARGETS:
            real = getattr(owner, name, None)
            if real is None or hasattr(real, "_racecheck_real"):
                continue
            saved.append((owner, name, owner.__dict__.get(name)))
            setattr(owner, name, _wrap(real, label))
        yield
    finally:
        for owner, name, own in reversed(saved):
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
