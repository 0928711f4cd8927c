"""Locks a forked child's threads share that the child did not make: the parent's stand-ins it inherited, and real
locks made before the run.

A ``threading.Lock()`` that a thread of the run made before ``fork`` is a stand-in of the parent's run; the child
has a copy of it (and of the run it points to), as a real child has its own copy of every lock. Its operations
must be the child's points: ``adopt`` makes the copied run forward what its stand-ins ask to the child's run,
their objects named under the process and marked as copies (``P1.fork.Lock#1``: the child's copy of ``Lock#1``,
never confused with the parent's, or with the child's own ``P1.Lock#1``). Without it, the first acquire in the
child raised "a controlled object was used by a thread outside its run".

A real lock made before the run (a library's import-time lock) stays real in a child as in the parent: no memory
point inside its critical sections. Its takes and gives are sent to the parent with the child's merged accesses,
in order (``real_lock_message``), and the parent records them for its thread's proxy under a key of the process's
own (``serve_real_lock``), so the data-race report orders the child's critical sections as the parent's.
"""

from __future__ import annotations

import os
from typing import Any

from racecheck import runtime
from racecheck.control.processes import link
from racecheck.runtime.steps import Obj, ObjKind

__racecheck_engine__ = True

# In a forked child: the copy of the run the forking thread was bound to (the parent's, as of the fork), else None.
INHERITED: Any = None
_GLOBAL = frozenset({ObjKind.ANY_MEMORY, ObjKind.ANYTHING, ObjKind.CLOCK, ObjKind.EXTERNAL, ObjKind.FAIRNESS,
                     ObjKind.THREAD, ObjKind.REST})
_REAL_LOCKS = "processes real locks"  # run.resources key: (process, lock id in it) -> the key the run records


def _forked() -> None:
    global INHERITED
    # a child of the run is forked outside the run (``link.uncontrolled``), which keeps the run it let go of
    INHERITED = runtime.thread_state.run or link.UNPICKLING


os.register_at_fork(after_in_child=_forked)


class _Forwarding:
    """What the copied run's stand-ins call, made on the child's run with their objects renamed."""

    def __init__(self, child: Any) -> None:
        self.child = child
        self.prefix = f"{child.label}.fork."
        self.names: dict[Obj, Obj] = {}

    def _rename(self, op: str, access: tuple) -> tuple[str, tuple]:
        out = []
        for one in access:
            obj = one.obj
            if obj.kind in _GLOBAL:
                out.append(one)
                continue
            new = self.names.get(obj)
            if new is None:
                new = self.names[obj] = Obj(obj.kind, self.prefix + obj.name, obj.engine)
            op = op.replace(obj.name, new.name, 1) if new.name not in op else op
            out.append(one._replace(obj=new))
        return op, tuple(out)

    def schedule(self, op: str, *, access: tuple = (), **kwargs: Any) -> bool:
        op, access = self._rename(op, access)
        return self.child.schedule(op, access=access, **kwargs)

    def note(self, op: str, skip: int = 0, access: tuple = ()) -> None:
        op, access = self._rename(op, access)
        self.child.note(op, skip, access)

    def effect(self, op: str, skip: int = 0, access: tuple = ()) -> None:
        op, access = self._rename(op, access)
        self.child.effect(op, skip, access)

    def touch(self, access: tuple) -> Any:
        return self.child.touch(self._rename("", access)[1])

    def narrow(self, access: tuple) -> None:
        self.child.narrow(self._rename("", access)[1])


def adopt(child: Any) -> None:
    """In a forked child, as its run begins: the parent's run as copied makes its stand-ins' points on ``child``."""
    copied = INHERITED
    if copied is None or copied is child or not hasattr(copied, "__dict__"):
        return
    forward = _Forwarding(child)
    for name in ("schedule", "note", "effect", "touch", "narrow"):
        setattr(copied, name, getattr(forward, name))
    for name in ("caller_record", "now", "sleep", "choose", "new_object_id", "add_cleanup"):
        setattr(copied, name, getattr(child, name))
    copied.aborting = False


def real_lock_message(change: int, lock: Any) -> tuple:
    """What the child sends, with its merged accesses, when a thread of the run takes (+1) or gives (-1) a real
    lock: the lock by its id in the child (the child's copy of a lock is its own, whatever its address)."""
    return ("real_lock", change, id(lock))


def serve_real_lock(run: Any, label: str, message: tuple) -> None:
    """In the parent, on the proxy of the child's thread: the take or give, recorded as the parent's own are."""
    _, change, lock_id = message
    keys = run.resources.setdefault(_REAL_LOCKS, {})
    key = keys.get((label, lock_id))
    if key is None:
        key = keys[(label, lock_id)] = object()  # kept for the run: its id is the lock's identity in the record
    run.real_lock(runtime.current_thread_record(), change, key)
