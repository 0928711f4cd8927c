"""The engine's extension contract: how code under control finds the run it belongs to, and how an extension
(the fake filesystem, or any future one) plugs into every run without ``explore`` knowing about it.

Everything that wants to be a scheduling point (sync primitives, the fake filesystem, ``racecheck.point``)
goes through the ``Run`` object returned by :func:`current_run`. Outside a controlled run it returns None and
callers must behave exactly like the real thing, so instrumented code stays usable by uncontrolled threads.

The Run protocol (implemented in ``racecheck.runtime.scheduler``)::

    run.schedule(op, *, enabled=None, timeout=None, yielding=False, skip=0) -> bool
        A scheduling point. ``op`` is a short, deterministic text for the trace ("fs.open /a.ckpt wb").
        ``enabled`` is a zero-argument predicate: the thread stays blocked until it holds (evaluated only by the
        scheduler, with every other controlled thread parked, so it may read shared state freely).
        ``timeout`` (virtual seconds) bounds the wait; returns False iff it timed out, True otherwise.
        ``yielding``: the thread waits for someone else (sleep(0), a failed try-acquire in a retry loop);
        switching away from it is not a preemption.
        ``skip``: how many frames between the caller and the code under test certainly belong to the engine (a
        primitive's method calling a shared helper that calls ``schedule`` passes 2); only makes finding the
        trace's source line cheaper, never changes it.
    run.choose(n, label) -> int
        A value in range(n) from the run's single choice stream (0 is the simplest: "no fault", "first").
        Recorded in the schedule token, replayed exactly.
    run.note(op, skip=0)          a traced effect that is not a scheduling point
    run.effect(op, skip=0)        the same, for an effect only a thread of the run may have (a release): raises
                                  outside it, stops a thread of a run being unwound
    run.now() -> float            virtual clock (seconds); advances only when every thread waits on time
    run.sleep(seconds)            scheduling point that lets virtual time pass for this thread
    run.crash(reason) -> NoReturn stop the whole run here (power loss); see ``racecheck.Crashed``
    run.resources                 dict for per-run state of extensions (e.g. the fake filesystem's store)
    run.new_object_id(kind) -> str  logical name for a traced object ("Lock#3"), stable across replays

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
from typing import Any, Protocol

__racecheck_engine__ = True

class _ThreadState(threading.local):
    """Which run and record the calling OS thread belongs to. The class-level Nones are what every thread that
    was never bound reads: looking a missing name up on a plain ``threading.local`` raises and swallows an
    AttributeError each time (1.6 µs against 0.3 µs, measured), and the patched ``Thread`` methods and every
    stand-in ask this of uncontrolled threads too."""

    run: Any = None
    thread: Any = None


_local = _ThreadState()

# The real primitive, captured before any instrumentation can swap names, for the engine's own use.
real_allocate_lock = _thread.allocate_lock


# The engine's hot paths (every scheduling point, every stand-in call) read ``thread_state.run`` and
# ``thread_state.thread`` directly: the same answers as the two functions below, without a Python call each (46 calls
# per micro-workload schedule, measured).
thread_state = _local


def current_run() -> Any | None:
    """The controlled run the calling thread belongs to, or None for an uncontrolled thread."""
    return _local.run


def current_thread_record() -> Any | None:
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


def point(name: str) -> None:
    """An explicit scheduling point, e.g. a delay hook in code under test; a no-op outside a controlled run."""
    run = current_run()
    if run is not None:
        run.schedule(f"point {name}", skip=1)


# ----- extensions ----------------------------------------------------------------------------------------------------


class Extension(Protocol):
    """What an extension offers the engine. Per-run state goes in ``run.resources[name]``; choices come from
    ``run.choose``; trace lines from ``run.schedule``/``run.note``."""

    name: str

    def active(self, config: Any) -> bool:
        """Whether this exploration (a ``racecheck.Config``) uses the extension."""

    def modules(self, config: Any) -> Iterable[Any]:
        """Extra modules (objects or dotted names) to instrument while it is active."""

    def config_key(self, config: Any) -> str:
        """A deterministic text of the options that change behaviour; it goes into the token's config hash."""

    def begin_run(self, run: Any, config: Any) -> None:
        """Before the test function of every schedule: set up per-run state."""

    def end_run(self, run: Any, crashed: bool) -> None:
        """After the schedule's threads are done (``crashed``: the run stopped at a simulated power loss)."""


_extensions: dict[str, Extension] = {}
_providers: dict[str, str] = {}  # Config field -> module that registers the extension using it, imported lazily


def register_extension(extension: Extension) -> None:
    """Make ``extension`` part of every exploration it says it is active for (idempotent by name)."""
    _extensions[extension.name] = extension


def declare_provider(field: str, module: str) -> None:
    """When a Config sets ``field`` (not None), import ``module`` first: it registers the extension that reads it.
    Keeps ``import racecheck`` light (the fake filesystem pulls in fsspec) without naming extensions in explore."""
    _providers[field] = module


def extensions_for(config: Any) -> list[Extension]:
    """The registered extensions this config activates, in registration order."""
    for field, module in _providers.items():
        if getattr(config, field, None) is not None:
            importlib.import_module(module)
    return [ext for ext in _extensions.values() if ext.active(config)]
