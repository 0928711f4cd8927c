"""The parent's side of a process of the run: one proxy thread per child, and ``Process``'s lifetime calls.

``Process.start()`` called by a controlled thread starts the child for real, its ``run`` replaced by
``link.ChildEntry``, and starts a proxy thread in the parent named after the child's thread (``P1.T0``): a
controlled thread of the run, so starting it is the start point of the child and its end is the child's end. When
the scheduler hands the proxy the baton, it tells the child to go and waits for its next request (counted as a wait
on another process, which the watchdog takes for progress); each request is a call of a served object, performed
here by the proxy, so it is a scheduling point of the proxy's. ``join``, ``is_alive``, ``exitcode``, ``terminate``
and ``kill`` are points on the proxy thread (join waits for its end). Every child of a run is reaped when the run is
torn down, pass or fail.
"""

from __future__ import annotations

import copy
import functools
import multiprocessing.connection
import multiprocessing.process
import sys
import threading
from typing import Any

from racecheck import runtime
from racecheck.control.processes import child_memory, handles, segments, shares, spawned, warm
from racecheck.control.processes.child_run import ONE_WAY, proxy_point
from racecheck.control.processes.child_run import join as join_run
from racecheck.control.processes.link import ROUTED, ChildEntry, portable, registry_of, uncontrolled
from racecheck.control.processes.models import ProcessConnection
from racecheck.control.processes.wire import PLAIN, Wire
from racecheck.runtime import RunContract
from racecheck.runtime.access import END, JOIN, on_thread
from racecheck.runtime.locations import code_location
from racecheck.runtime.teardown import RECORD

__racecheck_engine__ = True

CHILD = "_racecheck_child"  # the attribute of a started Process that names its ``Child``
FILES = "files"  # run.resources key of the real disk's view (``racecheck.fakefs.realdisk.RESOURCE``)
MACHINERY = ("multiprocessing.", "concurrent.futures.")  # the stdlib's own pools start their workers uncontrolled
_REAP_S = 5.0  # how long teardown waits for a child that said it ended to exit (real seconds)


def _real(fn: Any) -> Any:
    return getattr(fn, "_racecheck_real", fn)


_real_pipe = multiprocessing.connection.Pipe
_BaseProcess = multiprocessing.process.BaseProcess
# The originals, captured at import (before any exploration patches them): the proxy and the reaper act on the real
# process, never through the controlled calls.
_real_join = _BaseProcess.join
_real_kill = _BaseProcess.kill
_real_exitcode = _BaseProcess.exitcode.fget


def from_machinery(depth: int) -> bool:
    """Whether the caller ``depth`` frames up is the stdlib's multiprocessing or concurrent.futures code (a pool
    starting its workers, a queue making its lock), which keeps its real objects."""
    name = sys._getframe(depth + 1).f_globals.get("__name__", "")
    return name.startswith(MACHINERY) or name in ("multiprocessing", "concurrent.futures")


_AT_LINE: dict[tuple[str, int, str], Any] = {}
_AT: dict[tuple[str, int, str], Any] = {}  # the same callers, bare: called directly when no trace function is set


def at_line(line: tuple[str, int, str]) -> Any:
    """A caller whose frame stands at the child's line (its file, its line number, no engine marker), so the trace
    row of a point a proxy makes for its child names the child's line, as a thread's names its own."""
    call = _AT_LINE.get(line)
    if call is None:
        call = _AT_LINE[line] = functools.partial(_untraced, bare_at(line))
    return call


def bare_at(line: tuple[str, int, str]) -> Any:
    """``at_line``'s caller without the guard that lifts the trace function (the caller checks ``sys.gettrace``)."""
    at = _AT.get(line)
    if at is None:
        filename, number, module = line
        source = "\n" * (max(number, 1) - 1) + "def at(call, args, kwargs): return call(*args, **kwargs)\n"
        namespace: dict[str, Any] = {"__name__": module}
        _untraced(exec, compile(source, filename, "exec"), namespace)  # a fixed one-line caller
        at = _AT[line] = namespace["at"]
    return at


_DIRECT: dict[tuple[type, str], Any] = {}


def direct(cls: type, method: str) -> Any:
    """The function a proxy calls for a child's ``method`` of a served object of ``cls`` (with the object first):
    a routed method's own body (in the parent the routing only checks that it is not a child), else the attribute
    as the class holds it looked up per call (None)."""
    key = (cls, method)
    fn = _DIRECT.get(key, _DIRECT)
    if fn is _DIRECT:
        found = next((klass.__dict__[method] for klass in cls.__mro__ if method in klass.__dict__), None)
        fn = _DIRECT[key] = getattr(found, ROUTED, None)
    return fn


def _untraced(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with no trace function on the calling thread: the caller stands in the child's file,
    which line points (``lines``, the settrace backend) trace; its own line is no point of the proxy's."""
    trace = sys.gettrace()
    if trace is None:
        return fn(*args)
    sys.settrace(None)
    try:
        return fn(*args)
    finally:
        sys.settrace(trace)


class Child:
    """A child process of a run: its label, the real process, the pipe to it, its proxy thread's record."""

    def __init__(self, run: Any, process: Any, label: str, conn: Any) -> None:
        self.run = run
        self.process = process
        self.label = label
        self.conn = conn
        self.wire = Wire(conn)  # the requests and answers (processes.wire)
        self.outside = uncontrolled(run)  # entered for every request: made once
        self.progress = self.cpu_time  # the watchdog's measure of the child's progress (bound once)
        self.rec: Any = None
        self.started = False  # the real process was started
        self.went = False  # it was told to go
        self.said_end = False  # it reported its end (returned, exited or raised)
        self.killed = False
        self.home = getattr(process._target, "__module__", None)  # its target's module (start deletes _target)

    def over(self) -> bool:
        """The child's end as the run sees it: its proxy finished, or it was terminated or killed."""
        return self.killed or (self.rec is not None and self.rec.finished)

    # ----- the proxy thread ---------------------------------------------------------------------------------

    def serve(self) -> None:
        """The proxy thread's body: go, then serve the child's requests until it ends."""
        if not self.started:
            return
        try:
            if not self._send(("go", self._setting())):
                return
            self.went = True
            models = registry_of(self.run).models
            reply, plain = None, False
            while True:
                message = self._exchange(reply, plain)
                if message is None or message[0] == "exit":
                    self.said_end = message is not None
                    return
                if message[0] == "raised":
                    self.said_end = True
                    raise message[1]
                if message[0] != "call":
                    reply, plain = self._point(message), False  # None for a one-way note: nothing to answer
                    continue
                reply = self._call(models, message)
                plain = type(reply[1]) in PLAIN
        finally:
            if not self.said_end:
                self._stop()
            shares.release(self.run, self.label)

    @staticmethod
    def _call(models: dict[str, Any], message: tuple) -> tuple:
        """A child's call of a served object, performed on the model (a point of the proxy's), and the answer."""
        _, mid, method, args, kwargs, line = message
        model = models[mid]
        fn = _DIRECT.get((type(model), method), _DIRECT)  # ``direct``'s memo, read inline: a call per point less
        if fn is _DIRECT:
            fn = direct(type(model), method)
        if fn is None:
            call = getattr(model, method)
        else:
            call, args = fn, (model, *args)
        try:
            if not line:
                return ("ok", call(*args, **kwargs))
            if sys.gettrace() is None:
                return ("ok", (_AT.get(line) or bare_at(line))(call, args, kwargs))
            return ("ok", at_line(line)(call, args, kwargs))
        except Exception as exc:  # noqa: BLE001 - the child's call raises it there
            return ("err", portable(exc))

    def _setting(self) -> dict[str, Any] | None:
        """What a child needs to make its stand-ins' points through the proxy: its label, the run's options, the
        real disk's names if watched, the run's shared resources (the fake filesystem); for a fresh interpreter,
        also what to install (``spawned``; None outside an exploration: nothing is installed)."""
        chosen = None if method_of(self.process) == "fork" else spawned.OPTIONS
        if method_of(self.process) != "fork" and chosen is None:
            return None
        resources = {}
        disk = self.run.resources.get(FILES)
        if disk is not None:  # the real disk's view (racecheck.fakefs.realdisk.DiskRun): its names, no fingerprints
            disk = copy.copy(disk)
            disk.found = None
            resources[FILES] = disk
        resources.update(shares.for_child(self.run, self.label))
        return {"label": self.label, "config": self.run.config, "resources": resources, "install": chosen,
                "home": self.home, "tid": self.rec.tid, "memory": self.run.watch is not None,
                "lone": child_memory.LONE_CUT}

    def _point(self, message: tuple) -> tuple | None:
        """A point, note or question of the child's own stand-ins, made here; the answer, or None (one-way)."""
        try:
            value = proxy_point(self.run, message, at_line)
        except Exception as exc:  # noqa: BLE001 - the child's call raises it there
            return ("err", portable(exc))
        return None if message[0] in ONE_WAY else ("ok", value)

    def _send(self, message: Any) -> bool:
        try:
            with uncontrolled(self.run):
                self._put(message)
        except (OSError, ValueError):
            return False
        return True

    def _put(self, message: Any, plain: bool = False) -> None:
        try:
            self.wire.send(message, plain)
        except (OSError, ValueError):
            raise
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle is the child's error
            self.wire.send(("err", RuntimeError(f"racecheck: cannot send to {self.label}: {exc}")))

    def _exchange(self, reply: Any, plain: bool) -> Any:
        """Answer the child's last request (``reply``, None when it needs none), then its next message, or None if
        it died without one: a real wait, while the proxy holds the baton (nothing else runs), counted as a wait
        on another process. One pass outside the run for both halves of the round trip."""
        run = self.run
        resources = run.resources
        run.outside += 1
        resources[runtime.OUTSIDE_PROGRESS] = self.progress
        outside = self.outside
        outside.__enter__()
        try:
            # Only the child holds its end (the parent closed its copy at start, and children forked later never
            # had it): its death is EOF here, so the read alone waits for both.
            if plain:  # plain values: nothing that fails to pickle
                return self.wire.round_trip(reply)
            if reply is not None:
                self._put(reply)
            return self.wire.recv()
        except (EOFError, OSError, ValueError):
            return None
        finally:
            outside.__exit__()
            run.outside -= 1
            resources.pop(runtime.OUTSIDE_PROGRESS, None)

    def cpu_time(self) -> int | None:
        """The child's CPU time so far, in clock ticks (Linux), None where it cannot be read: the watchdog takes a
        wait on a child that still computes (a spawned interpreter importing torch) for progress, not a hang."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
        except (OSError, ValueError, IndexError, TypeError):
            return None

    def _stop(self) -> None:
        process = self.process
        if self.started and process.pid is not None and _real_exitcode(process) is None:
            _real_kill(process)

    # ----- the end of the run ----------------------------------------------------------------------------------

    def reap(self) -> None:
        """After the run (uncontrolled): the child gone, nothing left of it. One that never went is told to stop;
        one still running is killed."""
        process = self.process
        if not self.started or process.pid is None:
            return
        if not self.went:
            self._send(("stop", None))
        _real_join(process, _REAP_S if (self.said_end or not self.went) else 0.05)
        if _real_exitcode(process) is None:
            _real_kill(process)
            _real_join(process, _REAP_S)
        self.conn.close()


class LeakedProcess(RuntimeError):
    """A child of the run still running when the test ended: nothing stops it before the interpreter exits."""


def leak(run: RunContract) -> tuple[int, BaseException] | None:
    """As the run completes: its first child still running (a daemon: one that is not would keep its proxy, a
    thread that is not a background one, and the run would be a deadlock), as a failure of its proxy thread. A
    daemon outlives the test that started it and is killed only at the interpreter's exit: no process leaks."""
    for child in registry_of(run).children:
        if child.started and not child.over():
            rec = child.rec
            return rec.tid, LeakedProcess(
                f"{child.label} ({child.process.name}, a daemon) is still running when the test ends, waiting in "
                f"'{rec.op}': a leaked process (nothing stops it before the interpreter exits)")
    return None


def _reap_all(run: RunContract) -> None:
    for child in reversed(registry_of(run).children):  # a grandchild before its parent, which may be joining it
        child.reap()


def child_of(process: Any) -> Any:
    """The process's ``Child`` if the caller is a controlled thread of the run that started it, else None."""
    child = process.__dict__.get(CHILD)
    run = runtime.current_run()
    if child is None or run is None or child.run is not run or runtime.current_thread_record() is None:
        return None
    return child


def method_of(process: Any) -> str:
    """How the process starts: "fork", "spawn" or "forkserver"."""
    return getattr(process, "_start_method", None) or multiprocessing.get_start_method(allow_none=True) or "fork"


def _inherit_pipes(run: RunContract, process: Any, label: str) -> None:
    """The Pipe ends the child holds copies of: every end open in the parent for fork, the ones handed to it else."""
    models = registry_of(run).models.values()
    if method_of(process) == "fork":
        ends = [m for m in models if isinstance(m, ProcessConnection) and "P0" in m.holders]
    else:
        handed = [*vars(process).get("_args", ()), *vars(process).get("_kwargs", {}).values()]
        ends = [m for m in handed if isinstance(m, ProcessConnection)]
    for end in ends:
        end.holders.add(label)


def _name_per_run(process: Any, number: int) -> None:
    """A default name ("SpawnProcess-7") counts the processes the interpreter made before, which differs from
    schedule to schedule: the run's own count instead ("SpawnProcess-2"), as thread names get."""
    identity = getattr(process, "_identity", ())
    default = f"{type(process).__name__}-{':'.join(str(i) for i in identity)}"
    if identity and process.name == default:
        process.name = f"{type(process).__name__}-{number}"


def start(process: Any, real_start: Any) -> None:
    """``Process.start()`` for a controlled caller: the start point (the proxy thread's), then the real start with
    the child's ``run`` replaced."""
    run = runtime.current_run()
    registry = registry_of(run)
    label = f"P{len(registry.children) + 1}"
    parent_end, child_end = _real_pipe()
    child = Child(run, process, label, parent_end)
    if not registry.children:
        runtime.at_teardown(lambda: _reap_all(run))
        runtime.at_completion(lambda: leak(run))
    registry.children.append(child)
    _name_per_run(process, len(registry.children))
    proxy = threading.Thread(target=child.serve, name=f"{label}.T0", daemon=bool(process.daemon))
    proxy.start()  # the start point
    child.rec = getattr(proxy, RECORD)
    registry.process_of[child.rec.tid] = label
    run.note(f"{label}.T0 is T{child.rec.tid}")
    if run.locate:  # its first step shows where the child's code begins, as a thread's shows its target
        child.rec.loc = code_location(process._target or type(process).run)
    _inherit_pipes(run, process, label)
    method = method_of(process)
    forked = method == "fork"
    process.run = ChildEntry(child_end, None if forked else segments.install_in_child, join_run)
    try:
        # what runs at a fork in the child (os.register_at_fork hooks) is no thread's
        with uncontrolled(run), spawned.hash_seed(method):
            if warm.warm_for(process, method):  # forked from the exploration's template, not a fresh interpreter
                warm.start(process, real_start)
            else:
                real_start(process)
        child.started = True
        handles.name(process, label)
    finally:
        del process.run
        child_end.close()
    setattr(process, CHILD, child)


def ended(child: Any, run: RunContract) -> None:
    """The child ended in the run: its real process is gone too (a short real wait, as on another process)."""
    for model in registry_of(run).models.values():
        if isinstance(model, ProcessConnection):
            model.holders.discard(child.label)
    if child.started and _real_exitcode(child.process) is None and not child.killed:
        run.outside += 1
        try:
            _real_join(child.process, _REAP_S)
        finally:
            run.outside -= 1


def join(child: Any, timeout: float | None) -> None:
    run = child.run
    wait = None if timeout is None else max(float(timeout), 0.0)
    run.schedule(f"join {child.label}", access=on_thread(child.rec.tid, JOIN), enabled=child.over, timeout=wait)
    if child.over():
        ended(child, run)


def is_alive(child: Any) -> bool:
    run = child.run
    run.schedule(f"is_alive {child.label}", access=on_thread(child.rec.tid, JOIN), yielding=not child.over())
    return not child.over()


def exitcode(child: Any, real_exitcode: Any) -> Any:
    run = child.run
    run.schedule(f"exitcode {child.label}", access=on_thread(child.rec.tid, JOIN))
    if not child.over():
        return None
    ended(child, run)
    return real_exitcode(child.process)


def stop(child: Any, verb: str, real_stop: Any) -> None:
    """``terminate()`` / ``kill()``: a point on the child's end; it is over for the run from here."""
    run = child.run
    run.schedule(f"{verb} {child.label}", access=on_thread(child.rec.tid, END))
    if not child.over():
        child.killed = True
        child.rec.background = True  # a proxy left parked is no deadlock
        real_stop(child.process)
        for model in registry_of(run).models.values():
            if isinstance(model, ProcessConnection):
                model.holders.discard(child.label)


def by_sentinel(run: RunContract) -> dict[int, Child]:
    """The run's started children by their process's sentinel (what ``connection.wait`` is handed)."""
    return {child.process.sentinel: child for child in registry_of(run).children if child.started}
