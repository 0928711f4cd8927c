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
import threading
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.control.processes.wire import PLAIN, Wire
from racecheck.runtime import RunContract

__racecheck_engine__ = True

_state = runtime.thread_state  # the calling thread's run and record (read and set directly on the hot paths)
_real_lock = runtime.real_allocate_lock

RESOURCE = "processes"  # run.resources key of the run's ``Registry``
ROUTED = "_racecheck_routed"  # the attribute of a routed method that holds the method it routes

MEMORY = ("memory", "memory_point", "replace_memory", "merge_memory", "atomic")  # a child's memory messages

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
        self.thread_names: dict[int, str] = {}  # a proxy thread's id -> its thread's name, past a child's first
        self.thread_counts: dict[str, int] = {}  # a process's label -> the threads it started
        self.ready: dict[int, bool] = {}  # a proxy thread's id -> whether its thread's wait in the child can end


def registry_of(run: RunContract) -> Registry:
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
    return {tid: registry.thread_names.get(tid, f"{label}.T0") for tid, label in registry.process_of.items()}


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


class uncontrolled:  # noqa: N801 - used as a function: ``with uncontrolled(run):``
    """Pickling across the boundary runs as the real module's feeder and reader do: outside the run. Reducers
    (torch's, for tensors) take real locks and make their own; made by a controlled thread, those would be
    controlled objects held inside a real lock's critical section. Served objects still unpickle as ``run``'s.
    A class rather than a generator: it is entered for every point a child makes, and costs a third as much."""

    __slots__ = ("run", "bound", "rec", "saved")

    def __init__(self, run: RunContract) -> None:
        self.run = run

    def __enter__(self) -> None:
        global UNPICKLING
        state = _state  # ``runtime.bind`` and the two readers, without a call each (a hot path)
        self.bound, self.rec = state.run, state.thread
        self.saved = UNPICKLING
        state.run = state.thread = None
        UNPICKLING = self.run

    def __exit__(self, *exc: object) -> None:
        global UNPICKLING
        UNPICKLING = self.saved
        state = _state
        state.run, state.thread = self.bound, self.rec


def routed(method: Callable[..., Any]) -> Callable[..., Any]:
    """A method of a served object: in a child of a run, a request to the parent's model; else the method."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        link = LINK
        if link is not None:
            return link.call(self.mid, name, args, kwargs)
        return method(self, *args, **kwargs)

    setattr(call, ROUTED, method)  # what a proxy calls directly (``children.direct``): it is never in a child
    return call


class Mailboxes:
    """The child's end of the pipe, shared by its threads of the run: one reader at a time, each message to its
    thread's box (untagged answers are the first thread's)."""

    def __init__(self, conn: Any, first: int) -> None:
        self.conn = conn
        self.wire = Wire(conn)  # one write and one read per message (``wire``): the proxy's end reads the same frames
        self.first = first
        self.cond = threading.Condition(_real_lock())
        self.boxes: dict[int, deque] = {}
        self.reading = False
        self.sending = _real_lock()
        # Whether the child has threads of the run besides its first (``add_reader``): until then the first is the
        # only reader and every message is its own, so it reads without the boxes' condition (a quarter of the
        # child's side of a point went into taking it twice and notifying nobody).
        self.shared = False

    def add_reader(self) -> None:
        """A thread of the run besides the first is about to start: from now on, readers take turns. Called by the
        thread that starts it, the one thread of the run then running, which is not reading."""
        self.shared = True

    def send(self, message: Any, plain: bool = False) -> None:
        with self.sending:
            self.wire.send(message, plain)

    def receive(self, tid: int) -> Any:
        if not self.shared:
            return self.wire.recv()  # untagged: the first thread's, the only one
        cond = self.cond
        with cond:
            while True:
                box = self.boxes.get(tid)
                if box:
                    return box.popleft()
                if not self.reading:
                    self.reading = True
                    break
                cond.wait()
        while True:
            try:
                message = self.wire.recv()
            except BaseException:
                with cond:
                    self.reading = False
                    cond.notify_all()
                raise
            if isinstance(message, tuple) and len(message) == 3 and message[0] == "to":
                to, message = message[1], message[2]
            else:
                to = self.first
            with cond:
                if to == tid:
                    self.reading = False
                    cond.notify_all()
                    return message
                self.boxes.setdefault(to, deque()).append(message)
                cond.notify_all()


class Link:
    """The child's end of the pipe to its proxies: each thread of the run one request at a time, answered in order
    (``Mailboxes``). While a message is pickled or read, the child's thread is no thread of the run (a reducer's
    lock is no point). Before each message, the waits of the child's parked threads whose answer changed are
    reported (``child_threads``)."""

    def __init__(self, conn: Any, first: int = 0) -> None:
        self.conn = conn
        self.boxes = Mailboxes(conn, first)
        # The thread the parent said runs alone (no other thread could run at its memory accesses), until the
        # child sends anything but a memory access: its accesses then join its step without a round trip
        # (``child_memory``), as the parent's own keep ``Run.alone`` until the run does something.
        self.alone = -1
        self.merges: list[tuple] = []

    def call(self, mid: str, method: str, args: tuple, kwargs: dict) -> Any:
        # plain: a get, a put of a number. The line is looked for from the frame above the caller, which is the
        # engine's (a routed method, ``segments``' or the ranks' own call)
        plain = not kwargs and (not args or all(map(PLAIN.__contains__, map(type, args))))
        return self.request(("call", mid, method, args, kwargs, caller_line(3)), plain)

    def merge(self, message: tuple) -> None:
        """A memory access that joins the running step (``child_memory``): sent with the thread's next message."""
        self.merges.append(message)

    def send_ready(self, run: Any) -> None:
        """Before a message: the memory accesses that joined the running step since the last one, in order, then
        which parked waits of ``run``'s threads changed (nothing when none did)."""
        if self.merges:
            merges, self.merges = self.merges, []
            self.boxes.send(("merges", merges))
        readiness = getattr(run, "readiness", None)
        changed = readiness() if readiness is not None else None
        if changed:
            self.boxes.send(("ready", changed))

    def request(self, message: tuple, plain: bool = False) -> Any:
        if message[0] not in MEMORY:
            self.alone = -1
        state = _state
        bound, rec = state.run, state.thread
        state.run = state.thread = None
        boxes = self.boxes
        try:
            # ``send_ready`` only when it has something to say: merged accesses, or parked waits whose answer may
            # have changed (a child's run keeps them in ``pending``; another run is asked as before)
            if self.merges or getattr(bound, "pending", True):
                self.send_ready(bound)
            if boxes.shared:
                boxes.send(message, plain)
                status, value = boxes.receive(getattr(rec, "tid", boxes.first))
            elif plain:  # the child's only thread of the run: the wire is its own, to write and to read (no lock)
                status, value = boxes.wire.round_trip(message)
            else:
                boxes.wire.send(message)
                status, value = boxes.wire.recv()
        finally:
            state.run, state.thread = bound, rec
        if status == "ok":
            return value
        raise value

    def tell(self, message: tuple) -> None:
        if message[0] not in MEMORY:
            self.alone = -1
        bound, rec = runtime.current_run(), runtime.current_thread_record()
        runtime.bind(None, None)
        try:
            self.send_ready(bound)
            self.boxes.send(message)
        finally:
            runtime.bind(bound, rec)


def caller_line(depth: int = 2) -> tuple[str, int, str] | None:
    """Where the child's own code made the call (the first frame that is not the engine's), for the trace; the walk
    starts ``depth`` frames up (the caller of the caller by default)."""
    frame = sys._getframe(depth)
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
        LINK = Link(self.conn, setting.get("tid", 0) if setting is not None else 0)
        if self.setup is not None:
            self.setup()
        if setting is not None and self.join is not None:  # its stand-ins make points through the proxy
            self.join(LINK, setting)
        for extra in self.extras:
            extra()
        process = multiprocessing.current_process()
        try:
            type(process).run(process)
            run = runtime.current_run()
            if run is not None and hasattr(run, "shutdown"):
                run.shutdown()  # its threads of the run end before it does
        except SystemExit:
            self._say(("exit",))
            raise
        except BaseException as exc:
            self._say(("raised", portable(exc), traceback.format_exc()))
            raise
        self._say(("exit",))

    def _say(self, message: tuple) -> None:
        run = runtime.current_run()
        runtime.bind(None, None)  # what runs after the process's run (its exit handlers) is no thread of the run
        try:
            if LINK is not None:
                LINK.send_ready(run)
            self.conn.send(message)
        except OSError:
            pass  # the parent has ended the run: nobody listens
