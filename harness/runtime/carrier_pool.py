"""Controlled threads started on reused OS threads (carriers) that look, to the code under test and to every
observer, like the fresh OS threads ``Thread.start()`` makes.

Why: starting an OS thread is the largest single cost a schedule adds that is not the engine's own Python (the
clone, the new thread's bootstrap, two context switches on the one CPU the controlled threads share); handing a
body to a carrier that waits for one is a small fraction of it. The root of every schedule already runs on a
carrier (``runtime.carrier``); this module gives the threads the root starts the same.

What a fresh thread gives its body, and how a reused one gives the same (``tests/engine/test_carrier_pool.py``
compares each with real threads):

* its identity: the OS ident and native id of the thread it runs on, ``threading.current_thread()`` is its
  ``Thread`` object, ``enumerate()`` lists it while it runs; ``is_alive()``/``join()`` from any thread follow its end.
  The bookkeeping of ``Thread._bootstrap_inner`` is done here step for step, with a lock of ours in the place of the
  lock the interpreter releases when a thread's state is deleted (released when the body has ended). An idle
  carrier is listed by ``enumerate()`` under its own name (``racecheck-carrier-N``), as the root's carrier is.
* per-thread state that starts empty: ``threading.local`` values (kept in the interpreter's per-thread dict, which
  is cleared back to the carrier's own keys after every body), context variables (each body runs in a new
  ``contextvars.Context``), the trace and profile functions of ``threading.settrace``/``setprofile``.

Not reset: state that C extensions keep in C-level thread-locals (torch's grad mode switched off by a call rather
than a context manager, say) is seen by the next thread on the same carrier. ``Config(fresh_threads=True)``
starts every controlled thread on a new OS thread instead. The same happens where the interpreter's threading
internals are not the ones this was written for (CPython 3.10-3.12; 3.13 replaced the lock with thread handles),
which is checked once, at first use, on the calling thread.

A carrier whose body never comes back (stuck in uncontrolled code) is never handed another; ``close`` at the end of
the exploration ends the idle ones and abandons the rest, so no carrier outlives its exploration.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import Any

from racecheck import runtime
from racecheck.runtime.carrier import Carrier, trace_like_a_new_thread

__racecheck_engine__ = True

_allocate_lock = runtime.real_allocate_lock
_active = threading._active  # type: ignore[attr-defined]
_active_limbo_lock = threading._active_limbo_lock  # type: ignore[attr-defined]


def _load_state_dict() -> Callable[[], dict] | None:
    """The interpreter's per-thread dict (``PyThreadState_GetDict``), where ``threading.local`` keeps its values.

    It returns a borrowed reference, and ctypes takes a ``py_object`` result for a new one (and would release the
    dict once too often): the address comes back as a plain pointer, and reading it as an object takes a
    reference of its own."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        get = ctypes.pythonapi.PyThreadState_GetDict  # a PyDLL: called with the GIL held
        get.restype = ctypes.c_void_p
        get.argtypes = []
        as_object = ctypes.py_object

        def state_dict() -> dict:
            return ctypes.cast(get(), as_object).value

        return state_dict
    except (AttributeError, OSError, ImportError):
        return None


_state_dict = _load_state_dict()
_supported: bool | None = None


def _probe() -> bool:
    """Whether a thread's state can be made fresh here: the threading internals this module mirrors exist, and a
    ``threading.local`` value set on this thread is gone once its entry leaves the per-thread dict."""
    used = ("_set_tstate_lock", "_wait_for_tstate_lock", "_initialized")  # the tstate-lock design (3.10-3.12)
    if _state_dict is None or not all(hasattr(threading.Thread, name) for name in used):
        return False
    try:
        before = set(_state_dict())
        probe = threading.local()
        probe.value = 1
        added = [key for key in _state_dict() if key not in before]
        if len(added) != 1 or not isinstance(_state_dict(), dict):
            return False
        del _state_dict()[added[0]]
        return not hasattr(probe, "value")
    except Exception:  # noqa: BLE001 - any surprise means: not the interpreter this was written for
        return False


def supported() -> bool:
    global _supported
    if _supported is None:
        _supported = _probe()
    return _supported


class CarrierPool:
    """The carriers of one exploration's controlled threads (the root's own carrier is the session's)."""

    def __init__(self) -> None:
        self.idle: list[Carrier] = []  # waiting for a body; the last one back is handed out first
        self._all: list[Carrier] = []
        self._own_keys: dict[Carrier, frozenset] = {}  # each carrier's own per-thread dict keys, kept across bodies
        self._count = 0

    def start(self, thread: threading.Thread) -> None:
        """``Thread.start()`` for ``thread`` (called by the thread that starts it), on an idle carrier.

        What ``Thread._bootstrap_inner`` does before ``run()`` is done here, by the starter: the carrier's ident and
        native id are known, so the new thread's identity can be set before it runs, and ``start`` returns without
        waiting for the carrier to say it started (one context switch less; it waits for its turn anyway, as every
        controlled thread does, before it runs any code of its own)."""
        if not thread._initialized:  # type: ignore[attr-defined]
            raise RuntimeError("thread.__init__() not called")
        if thread._started.is_set():  # type: ignore[attr-defined]
            raise RuntimeError("threads can only be started once")
        carrier = self._take()
        host = carrier.thread
        ended = _allocate_lock()
        ended.acquire()  # held while the thread lives: what the interpreter's tstate lock is to a fresh thread
        thread._ident = host._ident  # type: ignore[attr-defined]
        # A daemon, as Run.start_thread makes every controlled thread: as in the stdlib, interpreter shutdown does
        # not wait for its lock.
        thread._tstate_lock = ended  # type: ignore[attr-defined]
        if hasattr(host, "_native_id"):
            thread._native_id = host._native_id  # type: ignore[attr-defined]
        thread._started.set()  # type: ignore[attr-defined]
        with _active_limbo_lock:
            _active[host._ident] = thread  # type: ignore[attr-defined]
        carrier.submit(lambda: self._host(carrier, thread, ended))

    def _take(self) -> Carrier:
        while self.idle:
            carrier = self.idle.pop()
            if carrier.usable:
                return carrier
        self._count += 1
        carrier = Carrier(name=f"racecheck-carrier-{self._count}")
        self._all.append(carrier)
        return carrier

    def _host(self, carrier: Carrier, thread: Any, ended: Any) -> None:
        """On the carrier: ``run()`` as ``Thread._bootstrap_inner`` calls it, then the thread's end and the carrier
        made clean for the next thread. Never raises (a carrier whose body raised would be abandoned)."""
        me = carrier.thread
        state = _state_dict()  # type: ignore[misc]
        own = self._own_keys.get(carrier)
        if own is None:
            own = self._own_keys[carrier] = frozenset(state)  # before any body ran here: the carrier's own
        trace, profile = sys.gettrace(), sys.getprofile()
        try:
            contextvars.Context().run(_run_body, thread)
        finally:
            with _active_limbo_lock:
                _active[me._ident] = me  # the carrier again (a thread's end removes its entry)
            sys.settrace(trace)
            sys.setprofile(profile)
            for key in [key for key in state if key not in own]:
                del state[key]  # its threading.local values, as a thread's end frees them
            if carrier.usable:
                self.idle.append(carrier)
            ended.release()

    def place(self, follow: Callable[[threading.Thread], None]) -> None:
        """Move the idle carriers where ``follow`` puts threads (the CPU of the batch about to start)."""
        for carrier in self.idle:
            follow(carrier.thread)

    def close(self) -> None:
        """End the idle carriers and abandon the busy ones (stuck in uncontrolled code): none outlives this."""
        carriers, idle, self._all, self.idle = self._all, self.idle, [], []
        self._own_keys.clear()
        for carrier in carriers:
            if carrier in idle:
                carrier.close()
            else:
                carrier.abandon()


def _run_body(thread: Any) -> None:
    trace_like_a_new_thread()
    try:
        thread.run()
    except BaseException:  # noqa: BLE001 - as the stdlib: the thread's excepthook reports it
        thread._invoke_excepthook(thread)
