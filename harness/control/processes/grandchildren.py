"""Grandchildren: a process that a child of the run starts is a process of the run too (``P3``, "child of P1"), and
the ``multiprocessing`` objects a child makes are served by the root like the parent's.

Why the grandchild talks to the root directly, not through its parent: a child runs only while its proxy holds the
baton, and its threads read its one pipe only while one of them waits for an answer, so a relay in the child would
need a thread of its own that reads while the child is parked (a real thread of the child, outside the one
schedule) and would double every message. Instead the root makes the grandchild's pipe, as it makes a child's,
and hands the child's end to the child, which starts the grandchild on it: the grandchild's proxy in the root serves
it as a child's proxy serves a child, with the run's one scheduler, baton and coordinator. The end crosses as a
descriptor through the standard library's resource sharer (``multiprocessing.resource_sharer``: how a
``Connection`` sent through a queue travels), since the child's pipe to the root carries pickles only.

The child's side (``start``, ``lifetime``, ``make``) runs in the child, on a thread of the run; each is a request
that a proxy of the child's thread performs in the root (``serve``, registered with ``child_run.SERVERS``): the
start point, join/is_alive/exitcode/terminate/kill as points on the grandchild, and the objects made. The real
process is started, waited on and reaped by the child, its real parent; the root kills it by pid when a run is torn
down, and, since an orphan's parent here may never reap it, the root is the orphans' subreaper (Linux) while a run
has grandchildren, and collects them at teardown: no process, zombie included, outlives its run.
"""

from __future__ import annotations

import multiprocessing.process
import os
import signal
import sys
import threading
import time
from multiprocessing import resource_sharer
from multiprocessing.connection import Connection
from multiprocessing.connection import Pipe as _real_pipe
from typing import Any

from racecheck import runtime
from racecheck.control.processes import child_run, grand_warm, link, segments, spawned
from racecheck.control.processes.children import Child, method_of
from racecheck.control.processes.link import PREPARES, ChildEntry, caller_line, registry_of, uncontrolled
from racecheck.control.processes.models import FACTORIES, ProcessConnection
from racecheck.runtime.access import END, JOIN, on_thread
from racecheck.runtime.locations import code_location
from racecheck.runtime.teardown import RECORD

__racecheck_engine__ = True

MARK = "_racecheck_grandchild"  # the attribute of a Process a child started under control: its ``Mark``
_REAP_S = 5.0  # how long teardown waits for a grandchild to leave (real seconds), as for a child
_POLL_S = 0.005
_SUBREAPER = 36  # prctl(PR_SET_CHILD_SUBREAPER)
_join = multiprocessing.process.BaseProcess.join
_real_join = getattr(_join, "_racecheck_real", _join)  # the real one, whether or not this process patched it yet
_terminate = multiprocessing.process.BaseProcess.terminate
_real_terminate = getattr(_terminate, "_racecheck_real", _terminate)
STARTED: list[Any] = []  # in a child: the processes it started under control (its exit terminates and joins them)
_GRANDCHILDREN = "grandchildren"  # run.resources key: the run's grandchildren, for the collection at teardown
_DESCENDANTS = "grandchildren-descendants"  # run.resources key: other descendants of their parents, likewise

# ----- the child's side ---------------------------------------------------------------------------------------------


class Mark:
    """What a child keeps on a Process it started under control: its run and the label the root gave it."""

    def __init__(self, run: Any, label: str) -> None:
        self.run, self.label = run, label


class GrandEntry(ChildEntry):
    """A grandchild's entry: as a child's, after closing the copy of its parent's pipe to the root that a fork
    copied (the root reads the parent's death as EOF on that pipe, which a copy held here would hide)."""

    def __call__(self) -> None:
        STARTED.clear()  # a fork copied its parent's
        inherited = link.LINK
        if inherited is not None:
            link.LINK = None
            try:
                inherited.conn.close()
            except OSError:
                pass
        super().__call__()


def _unbound() -> Any:
    """The calling thread let go of its run for a real call (a fork's hooks, a wait): gives what to put back."""
    bound, rec = runtime.current_run(), runtime.current_thread_record()
    runtime.bind(None, None)
    return bound, rec


def start(run: Any, process: Any, real_start: Any) -> None:
    """``Process.start()`` by a thread of the run in a child: the root makes the grandchild's proxy (the start
    point) and its pipe, and this child starts the real process on it."""
    handed = [arg.mid for arg in (*vars(process).get("_args", ()), *vars(process).get("_kwargs", {}).values())
              if isinstance(arg, ProcessConnection)]
    target = vars(process).get("_target")
    home = getattr(target, "__module__", None)
    where = code_location(target or type(process).run)  # its first step shows where its code begins
    label, number, end, extras = run.ask("process", bool(process.daemon), method_of(process), home, handed,
                                         where, caller_line())
    bound, rec = _unbound()
    pid = None
    try:
        conn = Connection(end.detach())
        try:
            identity = getattr(process, "_identity", ())
            if identity and process.name == f"{type(process).__name__}-{':'.join(str(i) for i in identity)}":
                process.name = f"{type(process).__name__}-{number}"  # the run's count, as a child's name gets
            forked = method_of(process) == "fork"
            entry = GrandEntry(conn, None if forked else segments.install_in_child, child_run.join)
            entry.extras = extras  # what the root prepared (the ranks' install), not what this child would
            process.run = entry
            try:
                with spawned.hash_seed(method_of(process)):  # forked from a root's template where it can be
                    grand_warm.start(bound, rec, process, method_of(process), real_start)
            finally:
                del process.run
            pid = process.pid
        finally:
            conn.close()
    finally:
        runtime.bind(bound, rec)
        run.ask("started", label, pid)  # None: it did not start, and its proxy ends at once
    setattr(process, MARK, Mark(run, label))
    STARTED.append(process)


def _at_exit(run: Any) -> None:
    """As the child's ``run`` returns: what ``multiprocessing``'s exit handler does with the processes it started,
    daemons terminated, then every one joined, as points on each (the real process ends only after them)."""
    mine = [p for p in STARTED if (mark := p.__dict__.get(MARK)) is not None and mark.run is run]
    for process in mine:
        if process.daemon:
            lifetime(process.__dict__[MARK], process, "terminate", _real_terminate)
    for process in mine:
        lifetime(process.__dict__[MARK], process, "join", _real_join, None)


child_run.AT_EXIT.append(_at_exit)


def mark_of(process: Any) -> Mark | None:
    """The process's ``Mark`` if the caller is a thread of the run (in the child) that started it, else None."""
    mark = process.__dict__.get(MARK)
    run = runtime.current_run()
    if mark is None or run is None or mark.run is not run or not run.mine():
        return None
    return mark


def lifetime(mark: Mark, process: Any, verb: str, real: Any, *args: Any) -> Any:
    """``join``/``is_alive``/``exitcode``/``terminate``/``kill`` of a grandchild: a point on it in the root, then
    what the real process says (this child is its parent: the real wait and the real signal are made here)."""
    over = mark.run.ask("lifetime", mark.label, verb, args[0] if args else None, caller_line())
    bound, rec = _unbound()
    try:
        if verb in ("terminate", "kill"):
            return real(process) if over else None
        if verb == "is_alive":
            if over:
                real(process)  # reaps it once it has left
            return not over
        if not over:
            return None
        _real_join(process, _REAP_S)  # it said it ended: it is leaving
        return real(process) if verb == "exitcode" else None
    finally:
        runtime.bind(bound, rec)


def make(run: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """``multiprocessing.<name>(...)`` by a thread of the run in a child: the root's model, this child's handle."""
    return run.ask("make", name, args, kwargs, caller_line())


MADE_BY_ROOT = frozenset(FACTORIES)  # the factories a child's call is served for (its pools: ``child_pools``)

# ----- the root's side ----------------------------------------------------------------------------------------------


class Remote:
    """What the root knows of a grandchild's real process: its pid, once its parent started it. It answers the
    names ``children.Child`` reads of a ``Process`` (its target, unknown here; its start method)."""

    sentinel = None

    def __init__(self, daemon: bool, method: str) -> None:
        self.daemon = daemon
        self.pid: int | None = None
        self.name = "?"
        vars(self).update({"_target": None, "_start_method": method})  # a Process's own names, not ours


def _state_of(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a live process, None once it is gone (Linux's /proc; elsewhere a signal)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        return "R", -1


def _running(pid: int) -> bool:
    state = _state_of(pid)
    return state is not None and state[0] not in ("Z", "X")


def _wait_gone(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while _running(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(_POLL_S)
    return True


class GrandChild(Child):
    """A grandchild as the root serves it: a child of the run whose real process belongs to another child."""

    def __init__(self, run: Any, label: str, conn: Any, parent: str, daemon: bool, method: str) -> None:
        super().__init__(run, Remote(daemon, method), label, conn)
        self.parent = parent

    def serve(self) -> None:
        try:
            super().serve()
        finally:  # its copies of the run's Pipe ends close with it, as a process's descriptors do at its exit
            _drop_ends(self.run, self.label)

    def _stop(self) -> None:
        pid = self.process.pid
        with uncontrolled(self.run):  # on the proxy thread: its /proc reads are no file points
            if self.started and pid is not None and _running(pid):
                _kill(pid)

    def reap(self) -> None:
        """After the run (uncontrolled): told to stop if it never went, killed if it does not leave."""
        pid = self.process.pid
        with uncontrolled(self.run):
            self._reap(pid)
        self.conn.close()

    def _reap(self, pid: int | None) -> None:
        if self.started and pid is not None:
            if not self.went:
                self._send(("stop", None))
            if not _wait_gone(pid, _REAP_S if (self.said_end or not self.went) else 0.05):
                _kill(pid)
                _wait_gone(pid, _REAP_S)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _drop_ends(run: Any, label: str) -> None:
    for model in registry_of(run).models.values():
        if isinstance(model, ProcessConnection):
            model.holders.discard(label)


def _by_label(run: Any, label: str) -> Any:
    return next(kid for kid in registry_of(run).children if kid.label == label)


def _caller(run: Any) -> str:
    """The process of the proxy making the request."""
    return registry_of(run).process_of[runtime.current_thread_record().tid]


def _subreaper(on: bool) -> None:
    """Linux: orphans of this process's descendants become its children (so it can reap them), or no longer."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_SUBREAPER, int(on), 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _descendants(pid: int) -> set[int]:
    """The live descendants of ``pid`` (Linux's /proc; none elsewhere)."""
    parents: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if entry.isdigit() and (state := _state_of(int(entry))) is not None:
            parents[int(entry)] = state[1]
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {kid for kid, parent in parents.items() if parent in frontier and kid not in found}
        found |= frontier
    return found


def _collect(run: Any, sharing: bool) -> None:
    """At teardown, after every process of the run was reaped: a grandchild (or another descendant of a child of
    the run, such as the resource tracker a spawn starts) whose parent died before reaping it is this process's
    (the subreaper's) zombie once it ends: collected here. Then the subreaper bit and the descriptor sharer (when
    this run started it) go."""
    me = os.getpid()
    pids = set(run.resources.pop(_DESCENDANTS, ()))
    pids.update(kid.process.pid for kid in run.resources.pop(_GRANDCHILDREN, ()) if kid.process.pid is not None)
    end = time.monotonic() + _REAP_S
    for pid in sorted(pids):
        while (state := _state_of(pid)) is not None and time.monotonic() < end:
            if state[1] == me and state[0] in ("Z", "X"):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
            else:
                time.sleep(_POLL_S)
    _subreaper(False)
    if sharing:
        resource_sharer.stop(_REAP_S)


def _with_run_let_go(run: Any, sharing: bool) -> None:
    with uncontrolled(run):
        _collect(run, sharing)


def _on_process(run: Any, message: tuple, at_line: Any) -> tuple:
    _, daemon, method, home, handed, where, line = message
    registry = registry_of(run)
    parent = _caller(run)
    kids = run.resources.get(_GRANDCHILDREN)
    if kids is None:
        kids = run.resources[_GRANDCHILDREN] = []
        with uncontrolled(run):
            sharing = getattr(resource_sharer._resource_sharer, "_listener", None) is None
        _subreaper(True)
        runtime.at_teardown(lambda: _with_run_let_go(run, sharing))
    label = f"P{len(registry.children) + 1}"
    parent_end, child_end = _real_pipe()
    child = GrandChild(run, label, parent_end, parent, daemon, method)
    child.home = home
    registry.children.append(child)
    kids.append(child)
    proxy = threading.Thread(target=child.serve, name=f"{label}.T0", daemon=daemon)
    at_line(line)(proxy.start, (), {}) if line else proxy.start()  # the start point, at the child's line
    child.rec = getattr(proxy, RECORD)
    if run.locate:
        child.rec.loc = where
    registry.process_of[child.rec.tid] = label
    run.note(f"{label}.T0 is T{child.rec.tid} (child of {parent})")
    ends = [m for m in registry.models.values() if isinstance(m, ProcessConnection)
            and (m.mid in handed if method != "fork" else parent in m.holders)]
    for end in ends:  # the Pipe ends it holds copies of: all of its parent's for fork, the ones handed else
        end.holders.add(label)
    with uncontrolled(run):  # the sharer's thread is no thread of the run
        shared = resource_sharer.DupFd(child_end.fileno())
        extras = tuple(fn for prepare in PREPARES if (fn := prepare(run)) is not None)
    child_end.close()
    return label, len(registry.children), shared, extras


def _on_started(run: Any, message: tuple) -> None:
    _, label, pid = message
    child = _by_label(run, label)
    child.process.pid = pid
    child.started = pid is not None
    parent = _by_label(run, child.parent).process.pid
    if parent is not None:  # what the parent started for it too (a spawn's resource tracker): collected at the end
        with uncontrolled(run):  # the real /proc, read as no thread of the run (no file point, no fake fs)
            found = _descendants(parent)
        run.resources.setdefault(_DESCENDANTS, set()).update(found)


def _on_lifetime(run: Any, message: tuple, at_line: Any) -> bool:
    """A point on the grandchild for its parent's call; whether the grandchild is over (for terminate and kill:
    whether the parent is to signal it)."""
    _, label, verb, timeout, line = message
    child = _by_label(run, label)
    tid = child.rec.tid

    def point() -> bool:
        if verb == "join":
            wait = None if timeout is None else max(float(timeout), 0.0)
            run.schedule(f"join {label}", access=on_thread(tid, JOIN), enabled=child.over, timeout=wait)
        elif verb == "is_alive":
            run.schedule(f"is_alive {label}", access=on_thread(tid, JOIN), yielding=not child.over())
        elif verb == "exitcode":
            run.schedule(f"exitcode {label}", access=on_thread(tid, JOIN))
        else:
            run.schedule(f"{verb} {label}", access=on_thread(tid, END))
            if child.over():
                return False
            child.killed = True
            child.rec.background = True  # a proxy left parked is no deadlock
            _drop_ends(run, label)
            return True
        return child.over()

    return at_line(line)(point, (), {}) if line else point()


def _on_make(run: Any, message: tuple, at_line: Any) -> Any:
    _, name, args, kwargs, line = message
    parent = _caller(run)
    call = FACTORIES[name]
    made = at_line(line)(call, (run, *args), kwargs) if line else call(run, *args, **kwargs)
    if name == "Pipe":
        for end in made:
            end.holders = {parent}  # the child's ends, not the root's
    return made


def serve(run: Any, message: tuple, at_line: Any) -> Any:
    """In the root, on the proxy of a child's thread: a request of this module's child side."""
    kind = message[0]
    if kind == "process":
        return _on_process(run, message, at_line)
    if kind == "started":
        return _on_started(run, message)
    if kind == "lifetime":
        return _on_lifetime(run, message, at_line)
    return _on_make(run, message, at_line)


for _kind in ("process", "started", "lifetime", "make"):
    child_run.SERVERS[_kind] = serve
