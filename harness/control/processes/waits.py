"""``multiprocessing.connection.wait`` as a point of the one scheduler: on the sentinels of processes of the run
and on served ``Pipe`` ends, mixed as a program likes, by a thread of the root or of a child.

Why a point and not the real wait: the objects it waits on change only when a thread of the run runs (a process of
the run ends when its proxy finishes; a served end is ready when a thread sends on its peer or the last holder of
the peer closes it), and none runs while the caller waits for real: a real wait on them is a hang, and a wait that
nothing will end is a deadlock only the scheduler can tell. So the wait is one point on all of them (the join
accesses of the processes, a look at each end), enabled once any of them is ready, with the timeout on the virtual
clock; it returns the ready ones in the order given. In a child, its grandchildren's sentinels and its handles of
served ends are named to the root, which makes the same point on the child's thread (``SERVERS["wait"]``); the
child then collects a grandchild that ended for real (it is that process's parent), so its sentinel is ready.
A list with anything else (a socket, a real connection, a process started outside the run) is the real wait.
"""

from __future__ import annotations

import multiprocessing.process
from typing import Any

from racecheck import runtime
from racecheck.control.processes import child_run, children, grandchildren
from racecheck.control.processes.link import caller_line, registry_of
from racecheck.control.processes.models import ProcessConnection, calling_process
from racecheck.runtime.access import JOIN, on_thread

__racecheck_engine__ = True

_join = multiprocessing.process.BaseProcess.join
_real_join = getattr(_join, "_racecheck_real", _join)  # the real one, whether or not this process patched it yet
_REAP_S = 5.0  # how long a child waits for a grandchild that said it ended to leave (real seconds)


def _point(run: Any, kids: list[Any], ends: list[Any], timeout: float | None) -> tuple[list[Any], list[Any]]:
    """In the root, on the waiting thread (or its proxy): the wait's point; the processes over and the ends ready."""
    caller = calling_process(run)
    looks = [end.waitable(caller) for end in ends]  # OSError for an end the caller does not hold, as recv raises
    access = (*(a for kid in kids for a in on_thread(kid.rec.tid, JOIN)), *(a for look, _ in looks for a in look))
    names = ", ".join([kid.label for kid in kids] + [end.mid for end in ends])

    def any_ready() -> bool:
        return any(kid.over() for kid in kids) or any(ready() for _, ready in looks)

    span = None if timeout is None else max(float(timeout), 0.0)
    run.schedule(f"wait {names}", access=access, enabled=any_ready, timeout=span)
    return [kid for kid in kids if kid.over()], [end for end, (_, ready) in zip(ends, looks, strict=True) if ready()]


def in_root(run: Any, objects: list[Any]) -> tuple[list[Any], list[Any]] | None:
    """The children and served ends ``objects`` name, in order, or None if anything else is among them."""
    by_sentinel = children.by_sentinel(run)
    kids, ends = [], []
    for obj in objects:
        if isinstance(obj, ProcessConnection):
            ends.append(obj)
        elif isinstance(obj, int) and obj in by_sentinel:
            kids.append(by_sentinel[obj])
        else:
            return None
    return (kids, ends) if objects else None


def wait_in_root(run: Any, objects: list[Any], timeout: float | None) -> list[Any] | None:
    """``connection.wait(objects, timeout)`` by a controlled thread of the root: the ready ones, or None when the
    list is not the run's alone (the caller then makes the real wait)."""
    found = in_root(run, objects)
    if found is None:
        return None
    over, ready = _point(run, *found, timeout)
    for kid in over:
        children.ended(kid, run)
    done = {kid.process.sentinel for kid in over}
    return [obj for obj in objects if (obj in ready if isinstance(obj, ProcessConnection) else obj in done)]


def wait_in_child(run: Any, objects: list[Any], timeout: float | None) -> list[Any] | None:
    """The same by a thread of the run in a child, on its grandchildren's sentinels and served ends: the point is
    the root's (``_on_wait``), the real collection of an ended grandchild this child's."""
    mine = {}
    for process in grandchildren.STARTED:
        mark = process.__dict__.get(grandchildren.MARK)
        sentinel = process.__dict__.get("_sentinel")  # read from the object (a subclass's property is its code)
        if mark is not None and mark.run is run and sentinel is not None:
            mine[sentinel] = process
    labels, mids = [], []
    for obj in objects:
        if isinstance(obj, ProcessConnection):
            mids.append(obj.mid)
        elif isinstance(obj, int) and obj in mine:
            labels.append(mine[obj].__dict__[grandchildren.MARK].label)
        else:
            return None
    if not objects:
        return None
    over, ready = run.ask("wait", labels, mids, timeout, caller_line())
    done = set()
    bound, rec = runtime.current_run(), runtime.current_thread_record()
    runtime.bind(None, None)  # the real collection is no point
    try:
        for sentinel, process in mine.items():
            if process.__dict__[grandchildren.MARK].label in over:
                _real_join(process, _REAP_S)  # it said it ended: it is leaving
                done.add(sentinel)
    finally:
        runtime.bind(bound, rec)
    return [obj for obj in objects if (obj.mid in ready if isinstance(obj, ProcessConnection) else obj in done)]


def _on_wait(run: Any, message: tuple, at_line: Any) -> tuple[list[str], list[str]]:
    """In the root, on the proxy of a child's thread: its wait's point; the labels over and the ends ready."""
    _, labels, mids, timeout, line = message
    registry = registry_of(run)
    kids = [next(kid for kid in registry.children if kid.label == label) for label in labels]
    ends = [registry.models[mid] for mid in mids]

    def point() -> tuple[list[Any], list[Any]]:
        return _point(run, kids, ends, timeout)

    over, ready = at_line(line)(point, (), {}) if line else point()
    return [kid.label for kid in over], [end.mid for end in ready]


child_run.SERVERS["wait"] = _on_wait
