"""The controlled threads of an exploration share one CPU (Linux), so a baton handoff never crosses CPUs.

Controlled threads run one at a time: a second CPU gives them nothing, but it costs at every handoff. When the
thread that passes the baton and the one that takes it sit on different CPUs, waking the taker is an
inter-processor interrupt (on a virtual machine, an exit to the hypervisor), and the taker then runs with caches
the other CPU warmed: on one CPU, the controlled workload keeps a clearly larger share of its uncontrolled
throughput (``benchmarks/bench_engine.py`` compares the two).

Which CPU: the one the explorer's own thread is on when it hands a batch of schedules to the carrier (the kernel
just put it there, so it is free enough), asked again at every batch (``runtime.batch``: at most 32 schedules),
so two explorations in parallel processes (pytest-xdist) that happened to land on the same CPU part again at
their next batch. Only the carrier is pinned;
the threads its test function starts inherit the mask from it, which is how every controlled thread gets it
without a system call of its own. The explorer's thread is never pinned.

On one CPU a handoff can still cost four context switches: the woken thread preempts the one that woke it, finds
the GIL still held, sleeps again, and the waker runs on only to block. So the carrier also runs under the
``SCHED_BATCH`` policy (inherited like the mask), under which a woken thread does not preempt the running one:
the waker blocks, releasing the GIL, and the woken thread runs once. That saves kernel time at every handoff and
most of the involuntary context switches.

Nothing outlives the exploration: threads started under control that are still alive at its end (an OpenMP pool
that torch created on first use, a leaked thread) get the process's mask and normal policy back, and child
processes are started with both (``spawning``), so a DataLoader worker never inherits one CPU. Off where the
platform has no thread affinity (macOS, Windows), and with ``Config(one_cpu=False)``. It changes no decision and
no trace: only where and how the threads are scheduled by the operating system.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__racecheck_engine__ = True

_TASKS = "/proc/self/task"


def _load_getcpu() -> Callable[[], int] | None:
    """libc's ``sched_getcpu`` (the CPU the calling thread runs on), or None where there is none."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import ctypes

        # PyDLL: called with the GIL held. A CDLL call drops the GIL, and the explorer asks this while the last
        # schedule's threads are still exiting: one of them took the GIL each time, a cross-CPU handoff per schedule
        getcpu = ctypes.PyDLL(None).sched_getcpu
        getcpu.restype = ctypes.c_int
        getcpu.argtypes = []
        return getcpu if getcpu() >= 0 else None
    except (OSError, AttributeError, ImportError):
        return None


_getcpu = _load_getcpu()


def supported() -> bool:
    return _getcpu is not None


class OneCpu:
    """Keeps a carrier thread (and so the controlled threads it starts) on the explorer's current CPU, under
    SCHED_BATCH."""

    def __init__(self, enabled: bool) -> None:
        self.active = enabled and _getcpu is not None
        self.original: frozenset[int] = frozenset()
        self.used: set[int] = set()  # every CPU a carrier was pinned to: the masks ``restore`` looks for
        self._placed: tuple[int, int] | None = None  # (native thread id, cpu) of the last placement
        self._batched: int | None = None  # the native id of the carrier last put under SCHED_BATCH
        self._followers: dict[int, int] = {}  # native id -> cpu of the other carriers ``follow`` placed
        if self.active:
            try:
                self.original = frozenset(os.sched_getaffinity(0))
            except OSError:
                self.active = False
            if len(self.original) < 2:
                self.active = False  # one CPU already: nothing to gain

    def place(self, thread: threading.Thread) -> None:
        """Pin ``thread`` to the CPU the calling thread runs on now (a no-op when it is there already)."""
        if not self.active:
            return
        native = thread.native_id
        cpu = _getcpu()  # type: ignore[misc]
        if native is None or cpu not in self.original or self._placed == (native, cpu):
            return
        try:
            os.sched_setaffinity(native, (cpu,))
        except OSError:
            self.active = False  # a cpuset changed under us, or a thread that ended: run unpinned from now on
            return
        self._placed = (native, cpu)
        self.used.add(cpu)
        _state.pinned = frozenset((cpu,))
        _state.original = self.original
        if self._batched != native:
            self._batched = native
            _set_policy(native, _BATCH)

    def follow(self, thread: threading.Thread) -> None:
        """Put another carrier (one that runs the threads a root starts, ``runtime.carrier_pool``) where the last
        ``place`` put the root's, under SCHED_BATCH: it was pinned where the thread that created it ran, and the
        root's carrier may have moved since."""
        if not self.active or self._placed is None:
            return
        native, cpu = thread.native_id, self._placed[1]
        if native is None or self._followers.get(native) == cpu:
            return
        try:
            os.sched_setaffinity(native, (cpu,))
        except OSError:
            return  # ended meanwhile: nothing to place
        if native not in self._followers:
            _set_policy(native, _BATCH)
        self._followers[native] = cpu

    def restore(self) -> None:
        """Give every thread of the process still on one of our single-CPU masks the process's mask back."""
        _state.pinned = None
        if not self.used:
            return
        ours = {frozenset((cpu,)) for cpu in self.used}
        for tid in _task_ids():
            try:
                if frozenset(os.sched_getaffinity(tid)) in ours:
                    os.sched_setaffinity(tid, self.original)
                    if os.sched_getscheduler(tid) == _BATCH:
                        _set_policy(tid, _NORMAL)
            except OSError:
                continue  # ended meanwhile
        self.used.clear()
        self._placed = None
        self._batched = None
        self._followers.clear()


_BATCH = getattr(os, "SCHED_BATCH", None)
_NORMAL = getattr(os, "SCHED_OTHER", None)


def _set_policy(tid: int, policy: int | None) -> None:
    """Best effort: a thread that ended meanwhile, or a platform without the policy, just keeps what it has."""
    if policy is None:
        return
    try:
        os.sched_setscheduler(tid, policy, os.sched_param(0))
    except (OSError, AttributeError):
        pass


class _State:
    pinned: frozenset[int] | None = None  # the mask a carrier has now, while an exploration runs
    original: frozenset[int] = frozenset()


_state = _State()


def _task_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_TASKS) if name.isdigit()]
    except OSError:
        return []


@contextmanager
def spawning() -> Iterator[None]:
    """Around the start of a child process by a pinned thread: the child inherits the process's mask and the normal
    policy, not one CPU and SCHED_BATCH."""
    pinned = _state.pinned
    if pinned is None:
        yield
        return
    try:
        current = frozenset(os.sched_getaffinity(0))
    except OSError:
        current = None
    if current != pinned:
        yield
        return
    try:
        os.sched_setaffinity(0, _state.original)
    except OSError:
        yield
        return
    try:
        batch = _BATCH is not None and os.sched_getscheduler(0) == _BATCH
    except OSError:
        batch = False
    if batch:
        _set_policy(0, _NORMAL)
    try:
        yield
    finally:
        try:
            os.sched_setaffinity(0, pinned)
        except OSError:
            pass
        if batch:
            _set_policy(0, _BATCH)
