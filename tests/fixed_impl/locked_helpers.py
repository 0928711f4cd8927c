"""Test doubles that force each interleaving deterministically (events, no sleeps)."""

from __future__ import annotations

import os
import threading
import types
from collections import defaultdict
from typing import Any

from lightning.fabric.plugins import TorchCheckpointIO

TIMEOUT = 30  # seconds; only a safety net so a broken implementation fails instead of hanging


class Gate:
    """``entered`` is set when the gated save starts; the save proceeds once ``release()`` is called."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self._go = threading.Event()

    def release(self) -> None:
        self._go.set()

    def wait_entered(self) -> None:
        assert self.entered.wait(TIMEOUT), "gated save never started"


class GatedIO(TorchCheckpointIO):
    """A user-style inner ``CheckpointIO``: records calls, can block or fail a save of a given file name.

    It also detects overlapping calls (what becomes a sharing violation on Windows): ``overlap`` turns True
    if a second operation starts while another is still inside this IO.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, Any]] = []  # file names as the caller spelled them (see _name)
        self.paths: list[str] = []  # the paths this IO was actually handed
        self.gates: dict[str, Gate] = {}
        self.fail: dict[str, BaseException] = {}
        self.overlap = False
        self._active = 0
        self._lock = threading.Lock()

    def gate(self, name: str) -> Gate:
        self.gates[name] = Gate()
        return self.gates[name]

    def _enter(self) -> None:
        with self._lock:
            self._active += 1
            if self._active > 1:
                self.overlap = True

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1

    def save_checkpoint(self, checkpoint: dict, path: Any, storage_options: Any = None) -> None:
        self.paths.append(os.fspath(path))
        name = _name(path)
        self._enter()
        try:
            self.calls.append(("save", name, checkpoint.get("v")))
            gate = self.gates.pop(name, None)
            if gate is not None:
                gate.entered.set()
                assert gate._go.wait(TIMEOUT), "gate never released"
            if name in self.fail:
                _fail_here(self.fail.pop(name))
            super().save_checkpoint(checkpoint, path, storage_options)
        finally:
            self._leave()

    def remove_checkpoint(self, path: Any) -> None:
        self._enter()
        try:
            self.calls.append(("remove", os.path.basename(os.fspath(path)), None))
            super().remove_checkpoint(path)
        finally:
            self._leave()


def _name(path: Any) -> str:
    """The file name the caller asked for: the default ``durability="atomic"`` hands the inner IO the hidden temp
    ``.<name>.tmp`` next to the target, which is renamed to ``<name>`` once durable."""
    name = os.path.basename(os.fspath(path))
    if name.startswith(".") and name.endswith(".tmp"):
        return name[1:-4]
    return name


def _fail_here(error: BaseException) -> None:
    """A distinct frame name, so tests can check the original traceback survived."""
    raise error


class WaitSpy:
    """Stands in for the ``threading`` module inside ``locked_async``: reports when a thread blocks on the
    plugin's condition variable, so a test knows a caller really is waiting before it releases a gate."""

    def __init__(self) -> None:
        self.waiting: defaultdict[str, threading.Event] = defaultdict(threading.Event)
        spy = self

        class SpyCondition(threading.Condition):
            def wait(self, timeout: Any = None) -> bool:
                spy.waiting[threading.current_thread().name].set()
                return super().wait(timeout)

        self.module = types.SimpleNamespace(
            Condition=SpyCondition, Thread=threading.Thread, current_thread=threading.current_thread
        )

    def wait_until_blocked(self, thread_name: str) -> None:
        assert self.waiting[thread_name].wait(TIMEOUT), f"{thread_name} never blocked"


def run_in_thread(name: str, fn: Any, *args: Any) -> tuple[threading.Thread, dict]:
    """Run ``fn(*args)`` in a named thread; the dict receives ``result`` or ``error``."""
    out: dict = {}

    def body() -> None:
        try:
            out["result"] = fn(*args)
        except BaseException as ex:  # handed to the test
            out["error"] = ex

    t = threading.Thread(target=body, name=name)
    t.start()
    return t, out
