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

Child processes a controlled thread starts (``subprocess.Popen``, ``multiprocessing`` processes, so DataLoader
workers) are registered with ``runtime.add_cleanup``: when a run cannot be unwound (a thread waiting on a child
that never answers, past the bound), the children still running are killed after teardown, which also lets a
thread stuck waiting on one of them return and end instead of leaking into the next test. The failure says
"stopped 1 child process"; the pids are in ``failure.cleanup``. Children of runs that unwound are left alone.
"""

from __future__ import annotations

import functools
import multiprocessing.connection
import multiprocessing.process
import multiprocessing.queues
import os
import select
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.runtime import affinity
from racecheck.runtime.access import EXTERNAL
from racecheck.runtime.cleanup import Leftover

__racecheck_engine__ = True

CHILD = "child process"
_STOP_WAIT_S = 5.0  # how long cleanup waits for a killed child to be reaped (real seconds)

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


# Threads the stdlib starts to talk to other processes (a multiprocessing queue's feeder, a process pool's
# management thread): plumbing that blocks on real conditions by design, never part of the program's schedule.
PLUMBING_MODULES = ("multiprocessing.", "concurrent.futures.process")


def is_plumbing(thread: Any) -> bool:
    """Whether ``thread`` is stdlib inter-process plumbing that must run uncontrolled even when a controlled
    thread starts it."""
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", None) or ""
    return module.startswith(PLUMBING_MODULES)


def _forget_run_in_child() -> None:
    """A process forked by a controlled thread has only that thread, and no scheduler: it runs uncontrolled."""
    runtime.bind(None, None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_run_in_child)


def _wrap(real: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(real)
    def external_call(*args: Any, **kwargs: Any) -> Any:
        run = runtime.current_run()
        me = runtime.current_thread_record()
        if run is None or me is None or getattr(run, "aborting", False) or getattr(run, "outside", 0):
            return real(*args, **kwargs)  # not controlled, unwinding, or nested (communicate calls wait)
        run.schedule(f"external {label}", access=EXTERNAL)
        run.outside = getattr(run, "outside", 0) + 1
        try:
            return real(*args, **kwargs)
        finally:
            run.outside -= 1
            if not run.aborting:  # a thread left behind by teardown returns late: the trace is closed by then
                run.note(f"returned from {label}", access=EXTERNAL)

    external_call._racecheck_real = real  # type: ignore[attr-defined]
    return external_call


def _stop_popen(process: subprocess.Popen) -> bool:
    """Kill a ``Popen`` child that is still running; whether it was."""
    if process.poll() is not None:
        return False
    process.kill()
    try:
        process.wait(timeout=_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    return True


def _stop_process(process: Any) -> bool:
    """Kill a ``multiprocessing`` child that is still running; whether it was."""
    if not process.is_alive():
        return False
    process.kill()
    process.join(timeout=_STOP_WAIT_S)
    return True


def _register_child(pid: Any, stop: Callable[[], bool]) -> None:
    if runtime.current_run() is not None and runtime.current_thread_record() is not None:
        runtime.add_cleanup(Leftover(CHILD, f"pid {pid}", verb="stopped"), stop)


def _wrap_popen_init(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        with affinity.spawning():
            real(self, *args, **kwargs)
        _register_child(self.pid, functools.partial(_stop_popen, self))

    __init__._racecheck_real = real  # type: ignore[attr-defined]
    return __init__


def _wrap_process_start(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def start(self: Any) -> None:
        with affinity.spawning():
            real(self)
        _register_child(self.pid, functools.partial(_stop_process, self))

    start._racecheck_real = real  # type: ignore[attr-defined]
    return start


# (owner, attribute, wrapper): where children of controlled threads are born
CHILDREN: list[tuple[Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
    (subprocess.Popen, "__init__", _wrap_popen_init),
    (multiprocessing.process.BaseProcess, "start", _wrap_process_start),
]


@contextmanager
def waiting_outside() -> Iterator[None]:
    """Patch every target (and the places children are born) for the block; restore the originals afterwards,
    pass or fail."""
    saved: list[tuple[Any, str, Any]] = []  # (owner, name, what its own __dict__ held, or None if inherited)
    try:
        wrappers = [(owner, name, functools.partial(_wrap, label=label)) for owner, name, label in TARGETS]
        for owner, name, wrap in [*wrappers, *CHILDREN]:
            real = getattr(owner, name, None)
            if real is None or hasattr(real, "_racecheck_real"):
                continue
            saved.append((owner, name, owner.__dict__.get(name)))
            setattr(owner, name, wrap(real))
        yield
    finally:
        for owner, name, own in reversed(saved):
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
