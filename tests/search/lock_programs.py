"""Small generated programs over the program's own locks, for the soundness test of dpor's lock-aware reduction
(``test_lock_soundness.py``).

A program is a tuple of threads, each a tuple of operations on state the test function makes afresh in every
schedule: an object's attributes, a dict with one key per thread, two locks, an RLock, a condition on the first
lock, and an event. Critical sections that conflict (``locked_inc``) and that commute (``locked_own``: each thread
its own key), reads outside the lock, nested locks in both orders (a deadlock), try-acquires and timeouts,
``locked()``, a condition's wait and notify, a wait inside a critical section, a lock used as a signal. No
``racecheck.point()``: memory watching sees the accesses. The threads are written out as a module of their own with
its source on disk, so memory watching rewrites them (code it does not watch keeps every lock ordered); what each
thread saw and the state left are the *outcome*, put into the run's resources.
"""

from __future__ import annotations

import importlib.util
import linecache
import sys
import tempfile
import threading
from pathlib import Path

import racecheck.runtime

OPS = {
    "locked_inc": ["with lock:", "    v = S.a", "    S.a = v + 1"],
    "locked_own": ["with lock:", "    D[tid] = D[tid] + 1"],
    "locked_read": ["with lock:", "    seen += (S.a,)"],
    "locked_b": ["with lock:", "    S.b = S.b * 2 + tid"],
    "read_a": ["seen += (S.a,)"],
    "write_b": ["S.b = 10 + tid"],
    "nested_ab": ["with lock:", "    with lock2:", "        seen += ('ab',)"],
    "nested_ba": ["with lock2:", "    with lock:", "        seen += ('ba',)"],
    "other_lock": ["with lock2:", "    v = S.a", "    S.a = v + 1"],
    "rlock_inc": ["with rlock:", "    with rlock:", "        v = S.a", "        S.a = v + 1"],
    "try_inc": ["if lock.acquire(blocking=False):", "    v = S.a", "    S.a = v + 1", "    lock.release()",
                "else:", "    seen += ('busy',)"],
    "timeout_inc": ["if lock.acquire(timeout=0.01):", "    D[tid] = D[tid] + 1", "    lock.release()",
                    "else:", "    seen += ('late',)"],
    "is_locked": ["seen += (lock.locked(),)"],
    "notify": ["with cond:", "    S.flag = 1", "    cond.notify()"],
    "wait_flag": ["with cond:", "    if not S.flag:", "        seen += (cond.wait(0.05),)"],
    "wait_in_cs": ["with lock:", "    seen += (ev.wait(0.05),)"],
    "set_event": ["ev.set()"],
    # a lock used as a signal: taken twice by one thread, the second acquire waits for another thread's release
    "signal_wait": ["lock2.acquire()", "lock2.acquire()", "seen += (S.a,)", "lock2.release()"],
    "signal_send": ["S.a = 5", "if lock2.locked():", "    lock2.release()"],
    "locked_set": ["with lock:", "    ev.set()"],
}


def source(program: tuple[tuple[str, ...], ...]) -> str:
    """The module of ``program``'s threads: one function each, over the state the driver hands it."""
    lines = []
    for tid, ops in enumerate(program):
        lines.append(f"def thread{tid}(S, D, lock, lock2, rlock, cond, ev, results, tid={tid}):")
        lines.append("    seen = ()")
        lines.extend(f"    {line}" for op in ops for line in OPS[op])
        lines.append(f"    results[{tid}] = seen")
        lines.append("")
    return "\n".join(lines) + "\n"


class State:
    def __init__(self) -> None:
        self.a = 0
        self.b = 0
        self.flag = 0


def driver(module, threads: int):
    """The test function: fresh state, the threads started and joined, the outcome left in the run."""

    def program() -> None:
        state, items = State(), {0: 0, 1: 0, 2: 0}
        lock, lock2, rlock = threading.Lock(), threading.Lock(), threading.RLock()
        cond, ev = threading.Condition(lock), threading.Event()
        results = {}
        args = (state, items, lock, lock2, rlock, cond, ev, results)
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
        outcome = (tuple(sorted(results.items())), state.a, state.b, state.flag, tuple(sorted(items.items())),
                   ev.is_set())
        racecheck.runtime.current_run().resources["outcome"] = outcome

    return program


_loaded: dict[tuple, object] = {}
_folder = Path(tempfile.mkdtemp(prefix="racecheck-lock-programs-"))


def load(program: tuple[tuple[str, ...], ...]):
    """The test function of ``program``; its threads come from a module of their own with its source on disk."""
    found = _loaded.get(program)
    if found is not None:
        return found
    name = f"lock_program_{len(_loaded)}"
    path = _folder / f"{name}.py"
    path.write_text(source(program))
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = driver(module, len(program))
    _loaded[program] = fn
    return fn
