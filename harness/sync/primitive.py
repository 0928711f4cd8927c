"""What every controlled primitive shares: its run, its logical name, and the stdlib's timeout conventions.

Each primitive keeps its state in plain Python (only one controlled thread runs at a time, so no real locking is
needed) and turns every operation into a scheduling point whose ``enabled`` predicate says when a blocked caller
may proceed. A failed non-blocking attempt (``blocking=False``, ``timeout=0``, ``get_nowait``) is a *yielding*
point: the caller is waiting for someone else, so switching away from it is not a preemption and spin loops
around it stay fair.
"""

from __future__ import annotations

from collections.abc import Callable

from racecheck.runtime import RunContract
from racecheck.runtime.access import READ, on
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True


def wait_timeout(timeout: float | None) -> float | None:
    """Condition/Event/Semaphore/Barrier semantics: None waits forever, a negative timeout polls like 0."""
    if timeout is None:
        return None
    return max(float(timeout), 0.0)


def attempt(run: RunContract, op: str, enabled: Callable[[], bool], timeout: float | None, access: tuple = ()) -> bool:
    """A possibly blocking attempt; ``timeout`` 0 polls, and a poll that will fail is a yielding point.

    Only ever called from a primitive's method, so this frame and that one are the engine's (``skip=2``). Whether a
    poll yields is read from the object as the thread arrives: the step that brings it there reads the object."""
    if timeout is not None and timeout <= 0:
        run.touch(tuple(on(a.obj, READ)[0] for a in access))
        return run.schedule(op, access=access, enabled=enabled, timeout=0, yielding=not enabled(), skip=2)
    return run.schedule(op, access=access, enabled=enabled, timeout=timeout, skip=2)


class Primitive:
    """A controlled object of one run, named in the trace by a per-run counter ("Lock#2"), never by its id.

    The name is also the object its operations touch (``racecheck.runtime.access``): each primitive builds the
    access tuples of its operations once, in ``_accesses``, so an operation adds no allocation."""

    _kind = "Object"  # the trace's name for it, numbered per run ("Lock#2")
    _obj_kind = ObjKind.LOCK  # what its operations touch, to the dependency relation

    def __init__(self, run: RunContract, name: str | Obj | None = None) -> None:
        """``name``: a name of the caller's choosing, or the object itself when another primitive shares it (a
        condition and its own lock are one object)."""
        self._run = run
        self._obj = name if isinstance(name, Obj) else Obj(self._obj_kind, name or run.new_object_id(self._kind))
        self._name = self._obj.text
        self._accesses()

    def _accesses(self) -> None:
        """Build the access tuples of the operations from ``_obj``."""

    def __racecheck_obj__(self, run: RunContract) -> Obj | None:
        """What this primitive's operations touch, if it belongs to ``run`` (else None): the object
        ``racecheck.point(name, on=self)`` names, read through this contract rather than its private fields."""
        return self._obj if self._run is run else None

    def __repr__(self) -> str:
        return f"<racecheck {self._name}>"
