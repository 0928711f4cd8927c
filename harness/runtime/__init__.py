"""The engine's extension contract: how code under control finds the run it belongs to, and how an extension
(the fake filesystem, or any future one) plugs into every run without ``explore`` knowing about it.

Everything that wants to be a scheduling point (sync primitives, the fake filesystem, ``racecheck.point``)
goes through the ``Run`` object returned by :func:`current_run`. Outside a controlled run it returns None and
callers must behave exactly like the real thing, so instrumented code stays usable by uncontrolled threads.

The run's side of the contract is :class:`RunContract` (implemented by ``racecheck.runtime.scheduler.Run``): the
only part of a run that stand-ins (``racecheck.sync``), the control layer and extensions use, and
:class:`ThreadContract` the part of a thread's record they read.

The Extension protocol (see :class:`Extension`): an extension registers itself once with
:func:`register_extension`; for every exploration whose Config activates it, the engine instruments the modules
it names, mixes its ``config_key`` into the token (a token recorded with other options is refused), and calls
``begin_run(run, config)`` before the test function of every schedule and ``end_run(run, crashed)`` once that
schedule's threads are all parked or gone (before crash recovery runs, if any).
"""

from __future__ import annotations

import _thread
import importlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from racecheck.runtime.access import ANYTHING, NOTHING, WRITE, Access
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True

class _ThreadState(threading.local):
    """Which run and record the calling OS thread belongs to. The class-level Nones are what every thread that
    was never bound reads: looking a missing name up on a plain ``threading.local`` raises and swallows an
    AttributeError each time, several times the cost of the lookup, and the patched ``Thread`` methods and every
    stand-in ask this of uncontrolled threads too."""

    run: Any = None
    thread: Any = None


_local = _ThreadState()

# The real primitive, captured before any instrumentation can swap names, for the engine's own use.
real_allocate_lock = _thread.allocate_lock


# The engine's hot paths (every scheduling point, every stand-in call) read ``thread_state.run`` and
# ``thread_state.thread`` directly: the same answers as the two functions below, without a Python call each, which
# would add up over the many calls of every schedule.
thread_state = _local


def current_run() -> RunContract | None:
    """The controlled run the calling thread belongs to, or None for an uncontrolled thread."""
    return _local.run


def current_thread_record() -> ThreadContract | None:
    """The scheduler's record of the calling controlled thread, or None."""
    return _local.thread


def bind(run: Any | None, thread: Any | None) -> None:
    """Attach the calling OS thread to a run (engine use only)."""
    _local.run = run
    _local.thread = thread


def add_cleanup(description: str, action: Callable[[], bool]) -> None:
    """For the calling controlled thread's run: something to undo if the run cannot be unwound.

    A thread stuck in uncontrolled code never reaches its own ``finally``/``with`` exits, so what it created (a
    temporary directory on the real disk) would stay behind. The scheduler runs ``action`` after such a run
    (``action`` returns whether there was anything left to undo) and the failure message lists ``description``.
    When every thread unwound, the program's own cleanup ran and the registrations are dropped unused. No-op for a
    thread that is not controlled."""
    run = current_run()
    if run is not None and current_thread_record() is not None:
        run.add_cleanup(description, action)


_reachers: list[Callable[[Any], None]] = []


TEARDOWN = "at-teardown"  # run.resources key: what ``at_teardown`` registered, run by ``teardown.teardown``


def at_teardown(action: Callable[[], None]) -> None:
    """For the calling controlled thread's run: ``action`` runs once every thread of the run is unwound, pass or
    fail (what the run started outside itself, a child process, is reaped there). No-op for a thread that is not
    controlled."""
    run = current_run()
    if run is not None and current_thread_record() is not None:
        run.resources.setdefault(TEARDOWN, []).append(action)


# run.resources key: while a thread waits on another process, how far that process has computed (a callable whose
# value changes while it uses CPU); the watchdog takes a change for progress (``racecheck.runtime.watchdog``)
OUTSIDE_PROGRESS = "outside-progress"
AT_COMPLETION = "at-completion"  # run.resources key: what ``at_completion`` registered, asked as the run completes


def at_completion(check: Callable[[], tuple[int, BaseException] | None]) -> None:
    """For the calling controlled thread's run: ``check()`` is asked once the run completes (its root and every
    thread that is not a background one ended) and before it is torn down; a ``(tid, exception)`` it returns is the
    run's failure, as an exception escaping thread ``tid`` would be (a child process still running: a leak)."""
    run = current_run()
    if run is not None and current_thread_record() is not None:
        run.resources.setdefault(AT_COMPLETION, []).append(check)


def on_reach(callback: Callable[[Any, tuple[Any, ...]], None]) -> None:
    """``callback(target, values)`` is told of every ``reach`` (memory watching registers itself here)."""
    if callback not in _reachers:
        _reachers.append(callback)


def reach(target: Any, values: tuple[Any, ...] = ()) -> None:
    """Code is about to run on a controlled thread though no call of the program's led there (a thread's target,
    an executor's work item, a future's done callback), given ``values`` (its arguments): whatever watches code
    takes it in first, and the thread that hands the values over names them (so an object the test made and gave to
    two threads has one name, whichever of them touches it first)."""
    for callback in _reachers:
        callback(target, values)


def point(name: str, on: Any = None) -> None:
    """An explicit scheduling point, e.g. a delay hook in code under test; a no-op outside a controlled run.

    The point says that the code on both sides of it (since the thread's previous point, and up to its next one)
    touches shared state: anything at all by default (memory, a lock's state, a file), so it conflicts with every
    step of every other thread; or only ``on``, when given: a controlled primitive (the point then conflicts with
    that lock's, queue's, ... operations), a string naming the state, or any other object (named by the order in
    which the run's points first name it)."""
    run = current_run()
    if run is not None:
        access = ANYTHING if on is None else (Access(_point_object(run, on), WRITE),)
        run.touch(access)
        run.schedule(f"point {name}", access=access, skip=1)


def _point_object(run: RunContract, on: Any) -> Obj:
    """The logical identity of ``racecheck.point(..., on=obj)``'s object within ``run``."""
    if isinstance(on, str):
        return Obj(ObjKind.POINT, on)
    touched = getattr(on, "__racecheck_obj__", None)  # a controlled primitive's (or future's) contract
    obj = touched(run) if touched is not None else None
    if isinstance(obj, Obj):  # what its operations touch in this run
        return obj
    named = run.resources.setdefault("points on", {})
    found = named.get(id(on))
    if found is None:  # keeps ``on`` alive: ids stay unique
        found = named[id(on)] = (on, Obj(ObjKind.POINT, f"{type(on).__name__}#{len(named) + 1}"))
    return found[1]


# ----- the contract ---------------------------------------------------------------------------------------------------


class RunContract(Protocol):
    """What a stand-in, the control layer or an extension may use of the run it got from :func:`current_run`.

    Written down so the boundary is one list: everything else on ``Run`` (the decision step, the records, teardown)
    is the engine's own and may change without touching ``racecheck.sync``, ``racecheck.control`` or the fake
    filesystem; and a stand-in for a run in a test (``tests/fakefs/fakerun_helpers.py``) knows what to offer. Every
    method is called by a controlled thread of the run (``caller_record`` says which), never by another thread.
    """

    resources: dict[str, Any]
    """Per-run state of extensions, by name (the fake filesystem keeps its store under "fakefs"): a run is the unit
    of isolation, so state kept anywhere else would leak from one schedule into the next."""

    aborting: bool
    """The run is being stopped (a failure elsewhere, teardown). A point unwinds the caller by itself; code that
    does more than schedule (a wait on another process, a trace note after the fact) checks it first."""

    outside: int
    """How many threads are inside a call that waits on another process (``racecheck.control.external`` counts
    them up and down): the watchdog takes that for progress, within a bound, instead of calling the run stuck."""

    config: Any
    """The run's ``RunConfig``; ``config.epoch`` is what ``time.time()`` reads at virtual time 0."""

    def schedule(
        self,
        op: str,
        *,
        access: tuple[Access, ...] = NOTHING,
        enabled: Callable[[], bool] | None = None,
        timeout: float | None = None,
        yielding: bool = False,
        skip: int = 0,
    ) -> bool:
        """A scheduling point: the only place where another thread may run, so every interleaving the engine can
        explore is a choice made here. ``op`` is a short, deterministic text for the trace ("fs.open /a.ckpt wb").
        ``access`` is what the operation touches (``racecheck.runtime.access``): the search layer decides from it
        alone which steps commute, so an operation that names less than it touches makes the reduction unsound.
        ``enabled`` is a zero-argument predicate: the thread stays blocked until it holds (evaluated only by the
        scheduler, with every other controlled thread parked, so it may read shared state freely). ``timeout``
        (virtual seconds) bounds the wait; returns False iff it timed out, True otherwise. ``yielding``: the thread
        waits for someone else (sleep(0), a failed try-acquire in a retry loop), so switching away from it is not a
        preemption and spin loops stay fair. ``skip``: how many frames between the caller and the code under test
        certainly belong to the engine (a primitive's method calling a shared helper that calls ``schedule`` passes
        2); only makes finding the trace's source line cheaper, never changes it."""

    def choose(self, n: int, label: str) -> int:
        """A value in range(n) from the run's single choice stream (0 is the simplest: "no fault", "first").
        Recorded in the schedule token and replayed exactly, so every nondeterminism an extension adds (a fault, a
        crash point) is part of the schedule and shrinks with it."""

    def note(self, op: str, skip: int = 0, access: tuple[Access, ...] = NOTHING) -> None:
        """A traced effect that is not a scheduling point (a release, a notify): it only enables others, and the
        next point is where they may run, so the trace shows it without a decision. ``access``: what it touches,
        part of the step the thread is running."""

    def effect(self, op: str, skip: int = 0, access: tuple[Access, ...] = NOTHING) -> None:
        """``note`` for an effect only a thread of the run may have (a release): raises for a thread outside the
        run, and stops a thread of a run being stopped, instead of tracing into it."""

    def touch(self, access: tuple[Access, ...]) -> None:
        """The step the calling thread is running also touches ``access``, found out after its point (a file
        renamed while the thread waited at it, the shared state a work item's code may touch). No trace line;
        a no-op for a thread outside the run."""

    def narrow(self, access: tuple[Access, ...]) -> None:
        """The step the calling thread is running touched only ``access``, less than its point declared: what an
        operation declares before it runs is what it may do (a mkdir may create), and once it has run it may say
        what it did (the directory was there: it only read the name). Only ever narrower than the declaration,
        which still stands for the thread while it waits at the point. No trace line."""

    def caller_record(self) -> ThreadContract:
        """The calling thread's record, after the checks ``effect`` makes: for a stand-in whose effect is neither a
        point nor traced at once (a semaphore's release checks before it counts)."""

    def now(self) -> float:
        """The virtual clock (seconds); it advances only when every thread waits on time, so timeouts and sleeps
        are deterministic."""

    def sleep(self, seconds: float) -> None:
        """A scheduling point that lets virtual time pass for this thread (``sleep(0)`` only yields)."""

    def crash(self, reason: str) -> NoReturn:
        """Stop the whole run here (a simulated power loss); raises ``racecheck.Crashed`` in the caller."""

    def new_object_id(self, kind: str) -> str:
        """A logical name for a traced object ("Lock#3"), counted per kind and run: stable across replays, where
        an id() or address would differ."""

    def add_cleanup(self, description: str, action: Callable[[], bool]) -> None:
        """See :func:`add_cleanup`."""

    def start_thread(self, thread: Any, real_start: Callable[[Any], None]) -> None:
        """Called from a controlled thread's ``Thread.start()`` (``racecheck.control.threads``): the new thread
        joins the run, and starting it is itself a scheduling point."""


class ThreadContract(Protocol):
    """What the control layer reads of a controlled thread's record (:func:`current_thread_record`, or the record
    a ``Thread`` object joined a run with): enough for ``join``, ``is_alive`` and the logical ident to follow the
    scheduler's view of the thread instead of the OS's."""

    tid: int
    """The thread's logical id in its run (T0 is the root): the same in every replay."""

    run: Any
    """The run it belongs to (None once the run has let go of it)."""

    launched: bool
    """Its OS thread has been started (a record reserved by ``start_thread`` waits for the "start" point)."""

    finished: bool
    """Its body has ended."""

    unwinding: bool
    """It was told to unwind (its run is being stopped), so it is told once only."""


# ----- extensions ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtensionOptions:
    """What an extension is told of an exploration: the part of a ``racecheck.Config`` the extensions read."""

    fs: Any = None  # a fake filesystem: "posix", "windows" or a ``racecheck.fakefs.FakeFS``; None: the real disk
    files: bool = True  # without ``fs``: real-disk file operations are points
    check_determinism: bool = False  # every schedule runs twice: an extension may compare what each saw


class Extension(Protocol):
    """What an extension offers the engine. Per-run state goes in ``run.resources[name]``; choices come from
    ``run.choose``; trace lines from ``run.schedule``/``run.note``. ``config`` is an ``ExtensionOptions``."""

    name: str

    def active(self, config: Any) -> bool:
        """Whether this exploration uses the extension."""

    def modules(self, config: Any) -> Iterable[Any]:
        """Extra modules (objects or dotted names) to instrument while it is active."""

    def config_key(self, config: Any) -> str:
        """A deterministic text of the options that change behaviour; it goes into the token's config hash."""

    def begin_run(self, run: RunContract, config: Any) -> None:
        """Before the test function of every schedule: set up per-run state."""

    def end_run(self, run: RunContract, crashed: bool) -> None:
        """After the schedule's threads are done (``crashed``: the run stopped at a simulated power loss)."""


_extensions: dict[str, Extension] = {}
_providers: dict[str, str] = {}  # Config field -> module that registers the extension using it, imported lazily


def register_extension(extension: Extension) -> None:
    """Make ``extension`` part of every exploration it says it is active for (idempotent by name)."""
    _extensions[extension.name] = extension


def declare_provider(field: str, module: str) -> None:
    """When a Config sets ``field`` (not None), import ``module`` and register its ``extension`` attribute: the
    extension that reads the field. Keeps ``import racecheck`` light (the fake filesystem pulls in fsspec), keeps
    the provider's import free of side effects, and names no extension in the search layer."""
    _providers[field] = module


def extensions_for(config: Any) -> list[Extension]:
    """The registered extensions this config activates, in registration order."""
    for field, module in _providers.items():
        if getattr(config, field, None) is not None:
            register_extension(importlib.import_module(module).extension)
    return [ext for ext in _extensions.values() if ext.active(config)]
