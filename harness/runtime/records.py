"""The run's records: one per controlled thread (``ThreadRecord``), the failure a run ends with (``FailureInfo``),
the options of a run (``RunConfig``), and ``unwind``, which stops a thread of a run that is being stopped."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from racecheck import runtime
from racecheck.errors import Abort
from racecheck.runtime.access import BEGIN, Access, on_thread
from racecheck.runtime.latch import Latch
from racecheck.runtime.relayed import relayed_where
from racecheck.runtime.trace import frame_path

if TYPE_CHECKING:
    from racecheck.runtime.scheduler import Run

__racecheck_engine__ = True


class ThreadRecord:
    """The scheduler's view of one controlled thread."""

    __slots__ = (
        "tid", "run", "thread", "baton", "started", "finished", "op", "loc", "enabled", "deadline",
        "timed_out", "yielding", "background", "exited", "launched", "yield_to", "body", "carried", "unwinding",
        "access", "merged", "merged_at", "merged_kinds", "points", "real_held",
    )

    def __init__(self, tid: int, run: Run, thread: Any) -> None:
        self.tid = tid
        self.run = run
        self.thread = thread
        self.baton = runtime.real_allocate_lock()
        self.baton.acquire()  # held = "not your turn"
        self.started = False
        self.finished = False
        self.op = "begin"
        self.loc = ""
        # What its pending operation (``op``) will touch: the search layer reads it for threads that wait.
        self.access: tuple[Access, ...] = on_thread(tid, BEGIN)
        self.enabled: Callable[[], bool] | None = None
        self.deadline: float | None = None
        self.timed_out = False
        self.yielding = False
        self.background = False  # daemon threads and idle executor workers may be left blocked at the end
        self.exited = Latch()
        self.launched = False  # its OS thread exists (a reserved record waits for the "start" point first)
        self.yield_to: set[int] | None = None  # after a yield: the threads that must run before this one again
        self.body: Callable[[], None] | None = None  # what its OS thread runs: the controlled body
        self.carried = False  # runs on a carrier that outlives the run (never joined by teardown)
        self.unwinding = False  # the run being stopped, an Abort was raised in this thread
        # Memory accesses made while no other thread could run (``Run.memory``): they join the running step, whose
        # trace event (at ``merged_at``) gets them when the step ends (``Run.flush_memory``).
        self.merged: list[tuple[Access, int]] = []  # (access, the thread's point where it was made)
        self.merged_kinds: dict[str, str] = {}  # object -> the kind of the last merged access to it
        self.merged_at = -1
        self.points = 0  # the thread's scheduling points so far, memory accesses that joined a step included
        self.real_held = 0  # real locks (made before the run) it holds: no memory point inside (control.real_locks)

    @property
    def name(self) -> str:
        return f"T{self.tid}"

    def can_run(self) -> bool:
        return self.timed_out or self.enabled is None or bool(self.enabled())


def unwind(rec: ThreadRecord) -> NoReturn:
    """Stop ``rec``'s code: its run is being stopped. ``rec.unwinding`` says it was told, so the line tracer, which
    tells a thread of a stopped run at its next line point, tells each thread once (``racecheck.control.lines``).

    Told again while it unwinds, the thread's cleanup (an ``__exit__``, a ``finally``) was cut short too, and what
    it left half done must never be finalized: the ``Abort`` and so every frame it unwinds are kept for the life of
    the process (``keep_forever``), as a program stopped where it stood never finalizes them. torch's zip writer,
    stopped inside ``torch.save`` and again at the write of ``__exit__``'s end of file, never marks itself finished,
    and its C++ destructor writes that end again once collected, into the stream the unwinding closed: the error
    thrown from a destructor is ``std::terminate``, the whole process gone (``manager-crash`` on a DCP-writing
    manager, pct seeds 0 and 1). A thread stopped once, whose cleanup ran whole, is finalized as before."""
    again = rec.unwinding
    rec.unwinding = True
    exc = Abort()
    if again:
        keep_forever(exc)
    raise exc


def keep_forever(obj: Any) -> None:
    """One reference to ``obj`` that is never given back, not even as the interpreter shuts down (which clears
    module globals, so a list there would finalize it then)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


@dataclass
class FailureInfo:
    """What a run failed with: the kind of failure, the exception that says so, and the thread it happened in."""

    kind: str  # "exception", "deadlock", "uncontrolled-blocking", "step-limit", "divergence", "internal"
    exception: BaseException
    tid: int | None

    def signature(self) -> tuple:
        """What "fails the same way" means for shrinking: kind, exception type and where it was raised (and, for a
        child process's failure relayed by its parent, where the child raised it: ``runtime.relayed``)."""
        if self.kind != "exception":
            return (self.kind, type(self.exception).__name__, "")
        where = ""
        tb = self.exception.__traceback__
        while tb is not None:
            where = f"{frame_path(tb.tb_frame)}:{tb.tb_lineno}"
            tb = tb.tb_next
        return (self.kind, type(self.exception).__name__, relayed_where(self.exception, where))


@dataclass
class RunConfig:
    """The options of one run (``explore`` derives them from the ``racecheck.Config``)."""

    max_steps: int = 200_000
    watchdog: float | None = 2.0  # seconds without a scheduling point before a block is called uncontrolled
    epoch: float = 1_700_000_000.0  # what time.time() reads at virtual time 0


def release_quietly(baton: Any) -> None:
    """Let a parked thread go; it may have been let go already (a leaving thread and teardown can both try)."""
    try:
        baton.release()
    except RuntimeError:
        pass


def never() -> bool:
    """The predicate of a wait that only time can end (a sleep)."""
    return False
