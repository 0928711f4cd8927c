"""The run as a forked child of it sees it: the stand-ins the child inherited (its locks, events, sleeps, files on
the real disk, line points) find a run bound to the child's thread, and every scheduling point they make is a
request to the child's proxy, which makes the same point in the parent's run (``proxy_point``). So a child's file
operations are points of the one schedule, with the accesses the parent's would have, and its waits on its own
objects are decided by the one scheduler.

Objects the child makes are its own (named ``P1.Lock#1``): only the child's threads can reach them, so whether one
of its waits can go on is read in the child; a wait that cannot (nothing in the child will ever set that event) is
a point that never becomes enabled in the parent, which the parent's scheduler reports as a deadlock or times
out on the virtual clock, as for a thread. The child's memory is not watched (``watch`` is None), and threads the
child starts run uncontrolled; a wait of theirs on the child's objects polls in real time.
"""

from __future__ import annotations

import time
from typing import Any

from racecheck import runtime
from racecheck.control.processes import shares, spawned
from racecheck.control.processes.link import caller_line, registry_of

__racecheck_engine__ = True

_real_sleep = time.sleep
_POLL_S = 0.001  # how often a thread the child started, which is not the run's, looks at a wait of its own


class ChildRecord:
    """The record of the child's thread of the run: what the stand-ins read of a thread."""

    def __init__(self, run: ChildRun) -> None:
        self.tid = 0
        self.run = run
        self.thread = None
        self.points = 0
        self.real_held = 0
        self.unwinding = False
        self.finished = False
        self.launched = True


class ChildRun:
    """The run's contract (``runtime.RunContract``) in a child: points are requests to the proxy."""

    watch = None  # the child's memory is not watched
    locate = False  # the child sends its own line with each point
    in_child = True  # processes and multiprocessing objects the child makes are real (control.processes.install)

    def __init__(self, link: Any, label: str, setting: dict[str, Any]) -> None:
        self.link = link
        self.label = label
        self.resources: dict[str, Any] = {}
        self.aborting = False
        self.outside = 0
        self.config = setting["config"]
        self.counters: dict[str, int] = {}
        self.record = ChildRecord(self)
        # ``os.getpid()`` inside the run: fixed, and its own (code that compares pids to notice a fork still can)
        self.logical_pid = 4242 + int(label[1:])
        # What the parent's run keeps that the child's stand-ins read: the real disk's names (watched files), a
        # copy as of the child's first step.
        self.resources.update(setting["resources"])

    def mine(self) -> bool:
        return runtime.thread_state.thread is self.record

    def ask(self, *message: Any) -> Any:
        return self.link.request(message)

    def tell(self, *message: Any) -> None:
        self.link.tell(message)

    # ----- the contract ------------------------------------------------------------------------------------------

    def new_object_id(self, kind: str) -> str:
        number = self.counters.get(kind, 0) + 1
        self.counters[kind] = number
        return f"{self.label}.{kind}#{number}"

    def now(self) -> float:
        return self.ask("now")

    def schedule(self, op: str, *, access: tuple = (), enabled: Any = None, timeout: float | None = None,
                 yielding: bool = False, skip: int = 0) -> bool:
        if not self.mine():
            return self._poll(enabled, timeout)
        self.record.points += 1
        ready = enabled is None or enabled()
        if timeout is not None and timeout <= 0:
            self.ask("point", op, access, caller_line(), True, None, yielding)
            return True if enabled is None else bool(enabled())
        if ready:
            self.ask("point", op, access, caller_line(), True, None, yielding)
            return True
        # Nothing but this thread can change the child's own objects: the wait never ends, or times out.
        return bool(self.ask("point", op, access, caller_line(), False, timeout, yielding))

    def _poll(self, enabled: Any, timeout: float | None) -> bool:
        """A wait by a thread the child started (not the run's): in real time."""
        if enabled is None:
            return True
        end = None if timeout is None else time.monotonic() + timeout
        while not enabled():
            if end is not None and time.monotonic() >= end:
                return False
            _real_sleep(_POLL_S)
        return True

    def sleep(self, seconds: float) -> None:
        if self.mine():
            self.ask("sleep", float(seconds), caller_line())
        else:
            _real_sleep(seconds)

    def choose(self, n: int, label: str) -> int:
        return self.ask("choose", n, label) if n > 1 and self.mine() else 0

    def note(self, op: str, skip: int = 0, access: tuple = ()) -> None:
        if self.mine():
            self.tell("note", op, access, caller_line())

    effect = note

    def touch(self, access: tuple) -> None:
        if self.mine():
            self.tell("touch", access)

    def narrow(self, access: tuple) -> None:
        if self.mine():
            self.tell("narrow", access)

    def caller_record(self) -> Any:
        return self.record

    def add_cleanup(self, description: str, action: Any) -> None:
        """The child's own cleanup runs in the child."""

    def start_thread(self, thread: Any, real_start: Any) -> None:
        real_start(thread)  # threads a child starts run uncontrolled

    def crash(self, reason: str) -> None:
        raise NotImplementedError("racecheck: a power loss inside a child process is not modelled")

    # ----- memory: not watched in a child (``watch`` is None); real locks' critical sections are plain ----------

    def real_lock(self, me: Any, change: int, lock: Any) -> None:
        """Real locks in a child: nothing to order (its memory makes no points)."""


def join(link: Any, setting: dict[str, Any]) -> None:
    """In a child, before its process's code runs: its thread is the run's, as the child sees it (a spawned
    child first installs the stand-ins a forked one inherited: ``spawned``)."""
    if setting.get("install") is not None:
        spawned.install(setting.get("home"), setting["install"])
    run = ChildRun(link, setting["label"], setting)
    runtime.bind(run, run.record)


def proxy_point(run: Any, message: tuple, at_line: Any) -> Any:
    """In the parent, on the child's proxy thread: the point (or note) a child's stand-in asked for."""
    kind = message[0]
    if kind == "point":
        _, op, access, line, ready, timeout, yielding = message
        if ready:
            call = lambda: run.schedule(op, access=access, yielding=yielding)  # noqa: E731
        else:
            call = lambda: run.schedule(op, access=access, enabled=_never, timeout=timeout)  # noqa: E731
        return at_line(line)(call, (), {}) if line else call()
    if kind == "sleep":
        _, seconds, line = message
        return at_line(line)(run.sleep, (seconds,), {}) if line else run.sleep(seconds)
    if kind == "share":  # the parent's fake filesystem (``shares``), on the child's behalf
        label = registry_of(run).process_of[runtime.current_thread_record().tid]
        line = message[5]
        call = lambda: shares.serve(run, label, message)  # noqa: E731
        return at_line(line)(call, (), {}) if line else call()
    if kind == "now":
        return run.now()
    if kind == "choose":
        return run.choose(message[1], message[2])
    if kind == "note":
        _, op, access, line = message
        return at_line(line)(run.note, (op,), {"access": access}) if line else run.note(op, access=access)
    if kind == "touch":
        return run.touch(message[1])
    if kind == "narrow":
        return run.narrow(message[1])
    raise ValueError(f"racecheck: a child asked for {kind!r}")


ONE_WAY = ("note", "touch", "narrow")  # messages the proxy does not answer


def _never() -> bool:
    return False
