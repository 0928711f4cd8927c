"""Small generated programs over plain shared memory, for the soundness test of memory watching
(``test_memory_soundness.py``).

A program is a tuple of threads, each a tuple of operations on state the test function makes afresh in every
schedule: an object's attributes, a dict's items, a list, a set, a module global, a closure variable, and a lock, a
queue and an event to order some of it. No ``racecheck.point()`` anywhere: racecheck must see the accesses by
itself. What each thread read is kept in a local tuple and stored once at its end; the test function then
puts together what the threads saw and what state is left (the *outcome*) into the run's resources, where the
test reads it. Every operation is written so as not to raise (a ``pop`` looks first), so every schedule's
outcome counts.

The threads are written out as source (``source``) and loaded as a module of their own (``load``): the memory
rewriter reads a module's source, and a generated one must have it like any other; the line-point reference
preempts in that module only, so the driver's own lines (starting and joining) are no points there.
"""

from __future__ import annotations

import importlib.util
import linecache
import queue
import sys
import tempfile
import threading
from pathlib import Path

import racecheck.runtime

OPS = {
    # attribute read-modify-write, in two statements so that line points alone separate the read and the write
    "attr_inc": ["v = S.a", "S.a = v + 1", "seen += (v,)"],
    "attr_read": ["seen += (S.a,)"],
    "attr_set": ["S.a = 10 + tid"],
    "attr_b": ["S.b = S.a * 2 + tid"],
    # dict items: two keys that commute, one key that conflicts
    "dict_inc": ["n = D.get('k', 0)", "D['k'] = n + 1", "seen += (n,)"],
    "dict_other": ["D['x' + str(tid)] = tid"],
    "dict_read": ["seen += (tuple(sorted(D)),)"],
    "dict_pop": ["seen += (D.pop('k', None),)"],
    # list and set methods
    "list_append": ["L.append(tid)"],
    "list_pop": ["seen += (L.pop() if L else None,)"],
    "list_len": ["seen += (len(L),)"],
    "list_first": ["seen += (L[0] if L else None,)"],
    "set_add": ["T.add(tid % 2)"],
    "set_has": ["seen += (0 in T,)"],
    # a module global that functions rebind, and a closure variable
    "global_inc": ["bump()"],
    "global_read": ["seen += (peek(),)"],
    "cell_inc": ["cell_bump()"],
    # synchronisation
    "locked_inc": ["with lock:", "    v = S.a", "    S.a = v + 1"],
    "locked_read": ["with lock:", "    seen += (S.a,)"],
    # a try-acquire gives up while another thread holds the lock: it can go where a blocking acquire cannot
    "try_inc": ["if lock.acquire(blocking=False):", "    v = S.a", "    S.a = v + 1", "    lock.release()",
                "else:", "    seen += ('busy',)"],
    "put": ["q.put(tid)"],
    "get": ["seen += (q.get_nowait() if not q.empty() else None,)"],
    "set_event": ["ev.set()"],
    "check_event": ["seen += (ev.is_set(),)"],
}

PRELUDE = '''\
G = 0


def bump():
    global G
    v = G
    G = v + 1


def peek():
    return G


def reset():
    global G
    G = 0


def counter():
    count = 0

    def cell_bump():
        nonlocal count
        v = count
        count = v + 1

    def cell_value():
        return count

    return cell_bump, cell_value
'''


def source(program: tuple[tuple[str, ...], ...]) -> str:
    """The module of ``program``'s threads: one function each, over the state the driver hands it. Only the
    threads' own code is in it, so that line points there (the reference) are points of the threads alone."""
    lines = [PRELUDE]
    for tid, ops in enumerate(program):
        lines.append(f"def thread{tid}(S, D, L, T, q, ev, lock, cell_bump, results, tid={tid}):")
        lines.append("    seen = ()")
        lines.extend(f"    {line}" for op in ops for line in OPS[op])
        lines.append(f"    results[{tid}] = seen")
        lines.append("")
    return "\n".join(lines) + "\n"


class State:
    def __init__(self) -> None:
        self.a = 0
        self.b = 0


def driver(module, threads: int):
    """The test function: fresh state, the threads started and joined, the outcome left in the run."""

    def program() -> None:
        module.reset()
        state, items, lst, members = State(), {}, [], set()
        q, ev, lock = queue.Queue(), threading.Event(), threading.Lock()
        cell_bump, cell_value = module.counter()
        results = {}
        args = (state, items, lst, members, q, ev, lock, cell_bump, results)
        # no loop over the threads: the driver's own steps between starting and joining are the start itself
        first = threading.Thread(target=module.thread0, args=args)
        second = threading.Thread(target=module.thread1, args=args)
        third = threading.Thread(target=module.thread2, args=args) if threads > 2 else None
        first.start()
        second.start()
        if third is not None:
            third.start()
        first.join()
        second.join()
        if third is not None:
            third.join()
        outcome = (tuple(sorted(results.items())), state.a, state.b, tuple(sorted(items.items())), tuple(lst),
                   tuple(sorted(members)), module.peek(), cell_value(), q.qsize(), ev.is_set())
        racecheck.runtime.current_run().resources["outcome"] = outcome

    return program


_loaded: dict[tuple, object] = {}
_folder = Path(tempfile.mkdtemp(prefix="racecheck-memory-programs-"))


def load(program: tuple[tuple[str, ...], ...]):
    """The test function of ``program``; its threads come from a module of their own with its source on disk
    (``module_of`` gives it)."""
    found = _loaded.get(program)
    if found is not None:
        return found
    name = f"memory_program_{len(_loaded)}"
    path = _folder / f"{name}.py"
    path.write_text(source(program))
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = driver(module, len(program))
    fn.threads_module = module
    _loaded[program] = fn
    return fn
