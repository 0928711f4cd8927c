"""The child's side of a process of the run: the pipe to its proxy thread in the parent, and the entry point that
runs the process's own ``run`` once the proxy says go.

A child started by a controlled thread runs only while its proxy thread (a controlled thread of the parent's run)
holds the baton: the child waits for "go", runs until it calls an inter-process object (a queue, pipe, value,
lock, event of the run), sends that call to its proxy, and waits for the answer; the proxy performs the call on
the parent's model of the object (a scheduling point like any other) and answers. So the parent's scheduler
chooses among every thread of every process, and a token replays them all.

Objects of the run reach a child as an id only (pickled for spawn, copied for fork), and every method of theirs
checks ``LINK`` first: set in a child of the run, it makes the call a request. In the parent, an id read back from
a child (an object sent through a queue) becomes the parent's model again (``rebuild``).
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True

RESOURCE = "processes"  # run.resources key of the run's ``Registry``

# Set in a child of a run once its proxy said go: every call of a served object goes through it. None elsewhere.
LINK: Link | None = None
# What else a child of the run needs before its code runs (the ranks' ``torch.distributed``): each is called in the
# parent as a child starts, with the run, and gives a picklable callable the child runs after go, or None.
PREPARES: list[Callable[[Any], Callable[[], None] | None]] = []
# The run whose objects are being unpickled by a thread that ``uncontrolled`` let go of its run, else None.
UNPICKLING: Any = None


class Registry:
    """The inter-process state of one run: its served objects by id, its child processes in start order."""

    def __init__(self) -> None:
        self.models: dict[str, Any] = {}
        self.children: list[Any] = []
        self.process_of: dict[int, str] = {}  # a proxy thread's id -> its process's label ("P1")


def registry_of(run: Any) -> Registry:
    """The run's registry, made on first use (a run is the unit of isolation: nothing outlives it)."""
    registry = run.resources.get(RESOURCE)
    if registry is None:
        registry = run.resources[RESOURCE] = Registry()
    return registry


def processes_in(run: Any) -> int:
    """How many processes the run had: its own, and each child it started."""
    registry = getattr(run, "resources", {}).get(RESOURCE)
    return 1 + (len(registry.children) if registry is not None else 0)


def thread_labels(run: Any) -> dict[int, str]:
    """The run's threads that belong to child processes, by thread id: "P1.T0" (empty without children)."""
    registry = getattr(run, "resources", {}).get(RESOURCE)
    if registry is None:
        return {}
    return {tid: f"{label}.T0" for tid, label in registry.process_of.items()}


def rebuild(cls: type, mid: str) -> Any:
    """Unpickling a served object: in the parent, the run's model itself; in a child, a handle that only knows the
    id (its every method is a request)."""
    if LINK is None:
        run = UNPICKLING or runtime.current_run()
        if run is not None:
            model = registry_of(run).models.get(mid)
            if model is not None:
                return model
    handle = cls.__new__(cls)
    handle.mid = mid
    return handle


@contextmanager
def uncontrolled(run: Any) -> Iterator[None]:
    """Pickling across the boundary runs as the real module's feeder and reader do: outside the run. Reducers
    (torch's, for tensors) take real locks and make their own; made by a controlled thread, those would be
    controlled objects held inside a real lock's critical section. Served objects still unpickle as ``run``'s."""
    global UNPICKLING
    bound, rec = runtime.current_run(), runtime.current_thread_record()
    saved = UNPICKLING
    runtime.bind(None, None)
    UNPICKLING = run
    try:
        yield
    finally:
        UNPICKLING = saved
        runtime.bind(bound, rec)


def routed(method: Callable[..., Any]) -> Callable[..., Any]:
    """A method of a served object: in a child of a run, a request to the parent's model; else the method."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        link = LINK
        if link is not None:
            return link.call(self.mid, name, args, kwargs)
        return method(self, *args, **kwargs)

    return call


class Link:
    """The child's end of the pipe to its proxy: one request at a time, answered in order. While a message is
    pickled or read, the child's thread is no thread of the run (a reducer's lock is no point)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def call(self, mid: str, method: str, args: tuple, kwargs: dict) -> Any:
        return self.request(("call", mid, method, args, kwargs, caller_line()))

    def request(self, message: tuple) -> Any:
        bound, rec = runtime.current_run(), runtime.current_thread_record()
        runtime.bind(None, None)
        try:
            self.conn.send(message)
            status, value = self.conn.recv()
        finally:
            runtime.bind(bound, rec)
        if status == "ok":
            return value
        raise value

    def tell(self, message: tuple) -> None:
        bound, rec = runtime.current_run(), runtime.current_thread_record()
        runtime.bind(None, None)
        try:
            self.conn.send(message)
        finally:
            runtime.bind(bound, rec)


def caller_line() -> tuple[str, int, str] | None:
    """Where the child's own code made the call (the first frame that is not the engine's), for the trace."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__racecheck_engine__"):
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__", "")


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError that says what it was."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - anything unpicklable travels as text
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class ChildEntry:
    """What a child of the run runs in place of its process's ``run`` (picklable, for spawn): wait for go, then the
    process's own ``run``, then say how it ended. A "stop" instead of go (the run ended before the child's first
    step) leaves at once."""

    def __init__(self, conn: Any, setup: Callable[[], None] | None = None,
                 join: Callable[[Link, dict], None] | None = None) -> None:
        self.conn = conn
        self.setup = setup  # what a fresh interpreter needs patched before the process's code runs
        self.join = join  # binds a forked child's thread to the run as the child sees it (``child_run.join``)
        run = runtime.current_run()
        self.extras = tuple(fn for prepare in PREPARES if (fn := prepare(run)) is not None)

    def __call__(self) -> None:
        global LINK
        runtime.bind(None, None)  # fork: the copied thread's run belongs to the parent
        try:
            go, setting = self.conn.recv()
        except (EOFError, OSError, ValueError, TypeError):
            go, setting = "stop", None
        if go != "go":
            raise SystemExit(0)
        LINK = Link(self.conn)
        if self.setup is not None:
            self.setup()
        if setting is not None and self.join is not None:  # forked: its stand-ins make points through the proxy
            self.join(LINK, setting)
        for extra in self.extras:
            extra()
        process = multiprocessing.current_process()
        try:
            type(process).run(process)
        except SystemExit:
            self._say(("exit",))
            raise
        except BaseException as exc:
            self._say(("raised", portable(exc), traceback.format_exc()))
            raise
        self._say(("exit",))

    def _say(self, message: tuple) -> None:
        runtime.bind(None, None)  # what runs after the process's run (its exit handlers) is no thread of the run
        try:
            self.conn.send(message)
        except OSError:
            pass  # the parent has ended the run: nobody listens
