"""Processes racecheck cannot control, named where they are started, never silent.

racecheck schedules the threads of one process. A process a controlled thread starts through the operating system
(``subprocess.Popen`` of any program, ``os.system``, ``os.posix_spawn``, ``os.fork`` while the run's threads are
alive), one it talks to that was started before the run, and a grandchild that outlives the child that started it
run on their own, in real time: whatever they do to shared state (files, sockets) is in no schedule. Each is
recorded here with its kind and the line of the code under test that made it (``record``), listed among the
escapes of the coverage line (``seen``), and kept on the run (``in_run``) so that the not-a-race check does not call
a failure "not a race" when such a process ran beside it: it says the question could not be decided, and why.

``record(kind, where)`` is the one entry point, for other code that meets a process it cannot control too (the
``multiprocessing`` support calls it for what it cannot bring under control). The hooks are patched for the
duration of an exploration (``watching``), like ``racecheck.control.external``'s, and pass straight through for a
thread that is not controlled. The words never hold a pid or a time, so a replay reads the same.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

RESOURCE = "processes escaped"  # run.resources key: the (kind, where) of this run's uncontrolled processes
STARTED = "processes started"  # run.resources key: pids of the children this run started
_STDLIB = (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])
_seen: dict[tuple[str, str], None] = {}  # (kind, where), first seen first, for the exploration now running


def record(kind: str, where: str | None = None) -> None:
    """An uncontrolled process of kind ``kind`` ("os.system (sh)"), made at ``where`` (file:line; by default the
    innermost frame of the code under test that called): into the exploration's escapes and the calling thread's
    run. Outside a run (an uncontrolled thread), nothing."""
    run = runtime.current_run()
    if run is None or runtime.current_thread_record() is None:
        return
    key = (kind, where if where is not None else user_location())
    _seen.setdefault(key, None)
    found = run.resources.setdefault(RESOURCE, [])
    if key not in found:
        found.append(key)


def seen() -> list[str]:
    """This exploration's uncontrolled processes, as the escapes list them ("os.system (sh) @test_x.py:12")."""
    return [_words(kind, where) for kind, where in _seen]


def in_run(run: Any) -> list[str]:
    """The uncontrolled processes that ``run`` started or talked to."""
    resources = getattr(run, "resources", None) or {}
    return [_words(kind, where) for kind, where in resources.get(RESOURCE, ())]


def _words(kind: str, where: str) -> str:
    return f"{kind} @{where}" if where else kind


def user_location() -> str:
    """file:line of the innermost caller that is neither racecheck's nor the standard library's ("" if none)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not frame.f_globals.get("__racecheck_engine__") and not name.startswith(_STDLIB):
            return f"{os.path.basename(name)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _program(args: Any) -> str:
    """The program a command line runs: its first word, without its folder."""
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        first = text.split()[0] if text.split() else text
    else:
        items = list(args) if args is not None else []
        first = os.fsdecode(items[0]) if items else "?"
    return os.path.basename(first)


def _is_python(program: str, executable: Any) -> bool:
    real = os.path.realpath(sys.executable)
    names = {os.path.basename(sys.executable), os.path.basename(real)}
    chosen = os.fsdecode(executable) if executable else program
    return os.path.basename(chosen) in names or os.path.basename(chosen).startswith("python")


def _controlled() -> bool:
    return runtime.current_run() is not None and runtime.current_thread_record() is not None


def _note_child(pid: int) -> None:
    run = runtime.current_run()
    if run is not None:
        run.resources.setdefault(STARTED, set()).add(pid)


def _popen_init(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def __init__(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        real(self, args, *rest, **kwargs)
        if not _controlled():
            return
        program = _program(args)
        executable = kwargs.get("executable")
        if kwargs.get("shell"):
            kind = f"a shell command run by subprocess ({program})"
        elif _is_python(program, executable):
            kind = f"a Python child process started by subprocess, not under control ({program})"
        else:
            kind = f"a child process that is not Python ({program})"
        record(kind)
        _note_child(self.pid)
        self._racecheck_escape_where = user_location()

    return __init__


def _popen_waits(real: Callable[..., Any]) -> Callable[..., Any]:
    """``wait``/``communicate``/``poll``: a child that this run did not start was started before it; after a wait
    that saw the child end, its own children that outlived it (grandchildren that escaped) are named too."""

    @functools.wraps(real)
    def wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(self, *args, **kwargs)
        run = runtime.current_run()
        if run is None or runtime.current_thread_record() is None:
            return result
        if self.pid not in run.resources.get(STARTED, ()):
            record(f"a process started before the run ({_program(self.args)})")
        elif self.returncode is not None and not getattr(self, "_racecheck_orphans_checked", False):
            self._racecheck_orphans_checked = True
            if _orphans_of(self.pid):
                record(f"a grandchild process that outlived its parent ({_program(self.args)})",
                       getattr(self, "_racecheck_escape_where", None))
        return result

    return wait


def _orphans_of(pid: int) -> bool:
    """Whether a process started after ``pid`` (a child that has ended) is left in our process group and is not our
    descendant: a grandchild that escaped when its parent ended, re-parented elsewhere (Linux: read from /proc;
    elsewhere: False)."""
    try:
        entries = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
        ours, group = os.getpid(), os.getpgid(0)
    except OSError:
        return False
    for candidate in entries:
        if candidate <= pid or candidate == ours:
            continue
        stat = _stat(candidate)
        if stat is not None and stat[1] == group and not _descends_from(candidate, ours):
            return True
    return False


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of ``pid``, or None when it is gone or unreadable. Read with ``os.open``, never
    the builtin ``open``: in a controlled thread that is the real disk's stand-in, whose every call is a scheduling
    point, and how many processes there are must not change the schedule."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        fields = data.rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):  # a process tree deeper than this is not one a test makes
        stat = _stat(pid)
        if stat is None or stat[0] <= 1:
            return False
        if stat[0] == ancestor:
            return True
        pid = stat[0]
    return False


def _system(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def system(command: Any) -> int:
        if _controlled():
            record(f"os.system ({_program(command)})")
        return real(command)

    return system


# Callers whose processes are accounted for elsewhere: subprocess's own use of posix_spawn and fork (its Popen is
# recorded), and multiprocessing's (its children are the multiprocessing support's: controlled, or recorded there).
_ACCOUNTED = ("subprocess", "multiprocessing", "concurrent.futures")


def _accounted(depth: int = 2) -> bool:
    """Whether the caller of the hook (``depth`` frames up) is a module in ``_ACCOUNTED``."""
    name = sys._getframe(depth).f_globals.get("__name__") or ""
    return name.split(".")[0] in _ACCOUNTED or name.startswith(_ACCOUNTED)


def _spawn(real: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(real)
    def spawn(path: Any, *args: Any, **kwargs: Any) -> int:
        if _controlled() and not _accounted():
            record(f"os.{name} ({os.path.basename(os.fsdecode(path))})")
        return real(path, *args, **kwargs)

    return spawn


def _fork(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def fork() -> int:
        if _controlled() and threading.active_count() > 1 and not _accounted():
            record("os.fork with live threads (the child copies them parked, and runs uncontrolled)")
        return real()

    return fork


def _targets() -> list[tuple[Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]]:
    targets: list[tuple[Any, str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = [
        (subprocess.Popen, "__init__", _popen_init),
        (subprocess.Popen, "wait", _popen_waits),
        (subprocess.Popen, "communicate", _popen_waits),
        (subprocess.Popen, "poll", _popen_waits),
        (os, "system", _system),
    ]
    for name in ("posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            targets.append((os, name, functools.partial(_spawn, name=name)))
    if hasattr(os, "fork"):
        targets.append((os, "fork", _fork))
    return targets


@contextmanager
def watching() -> Iterator[None]:
    """The hooks in place for an exploration, its list of escapes started empty; the originals back afterwards,
    pass or fail. Entered after ``external.waiting_outside`` (it wraps what that one wrapped)."""
    _seen.clear()
    saved: list[tuple[Any, str, Any]] = []  # (owner, name, what its own __dict__ held, or None if inherited)
    try:
        for owner, name, wrap in _targets():
            real = getattr(owner, name, None)
            if real is None or getattr(real, "_racecheck_escape", False):
                continue
            wrapped = wrap(real)
            wrapped._racecheck_escape = True  # type: ignore[attr-defined]
            saved.append((owner, name, owner.__dict__.get(name)))
            setattr(owner, name, wrapped)
        yield
    finally:
        for owner, name, own in reversed(saved):
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)
