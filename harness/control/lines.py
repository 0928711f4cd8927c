"""Line-level preemption, opt-in (``explore(..., preempt="lines")``): plain-Python data races without
``racecheck.point()``.

Normally only synchronisation, the fake filesystem and explicit delay hooks are scheduling points, so code between
them runs atomically. With line-level preemption every line executed in the chosen modules is a scheduling point,
and so is every store to shared state (an attribute, a subscript, a global, a closure cell) right before it takes
effect: ``self.n += 1`` reads, computes, then stores within one line, and the point before the store is where
another thread can slip in between the read and the write. Stores to local variables are not points (no other
thread can see them).

How, on Python 3.12+: ``sys.monitoring`` (PEP 669) under a free tool id, with LINE, JUMP and INSTRUCTION events
switched on only for the code objects of the chosen modules (every live function whose code comes from one of
their files, and the code nested in it), so nothing else in the process pays anything. INSTRUCTION callbacks
disable themselves at every offset that is not a store, so after the first pass only stores and line starts cost
a call. A backward jump that stays on the same line (a one-line loop) is a line point too, as ``sys.settrace``
reports it. Events are cleared and the tool id freed when the exploration ends, pass or fail.

On 3.10/3.11: a trace function, installed with ``threading.settrace`` for the duration of the exploration, so every
thread started under control has it from its first instruction. It returns a local tracer only for frames whose
code belongs to a chosen module and whose thread is a controlled one, so everything else (the engine, the stdlib,
other threads) pays one cheap call per function call and nothing per line. Tools that use ``sys.settrace``
themselves (coverage, debuggers) are suspended in controlled threads while it runs; on 3.12+ they are not touched.

Both produce the same points in the same order (a line point, then the store points of that line), so traces and
tokens mean the same on every version. Threads that are not controlled, and a run that is unwinding, get none.

Cost: see ``benchmarks/bench_strategies.py`` (schedules per second with and without).
"""

from __future__ import annotations

import dis
import gc
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime
from racecheck.runtime.access import MEMORY
from racecheck.runtime.records import unwind

__racecheck_engine__ = True

STORES = {
    "STORE_ATTR": "attr",
    "STORE_SUBSCR": "item",
    "STORE_GLOBAL": "global",
    "STORE_DEREF": "cell",
    "STORE_NAME": "name",
    "DELETE_ATTR": "attr",
    "DELETE_SUBSCR": "item",
}


def _stores(code: types.CodeType, cache: dict[types.CodeType, dict[int, str]]) -> dict[int, str]:
    """Offset -> trace text of every store to shared state in ``code`` (computed once per code object)."""
    found = cache.get(code)
    if found is None:
        found = {}
        for instruction in dis.get_instructions(code):
            kind = STORES.get(instruction.opname)
            if kind is None:
                continue
            verb = "del" if instruction.opname.startswith("DELETE") else "store"
            if kind == "item":
                found[instruction.offset] = f"{verb} item"
            else:
                found[instruction.offset] = f"{verb} {kind} {instruction.argval}"
        cache[code] = found
    return found


class LineTracer:
    """The trace functions for one exploration: which source files get line-level points."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)
        self._stores: dict[types.CodeType, dict[int, str]] = {}

    def global_trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event != "call" or frame.f_code.co_filename not in self.files or runtime.current_run() is None:
            return None
        if _stores(frame.f_code, self._stores):
            frame.f_trace = self.local_trace  # first: 3.13 turns opcode events on only for a frame that has one
            frame.f_trace_opcodes = True
        return self.local_trace

    def local_trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            run = _controlled_run()
            if run is not None:
                run.touch(MEMORY)  # a line point marks the code on both sides of it
                run.schedule("line", access=MEMORY)
        elif event == "opcode":
            text = self._stores.get(frame.f_code, {}).get(frame.f_lasti)
            if text is not None:
                run = _controlled_run()
                if run is not None:
                    run.touch(MEMORY)
                    run.schedule(text, access=MEMORY)
        return self.local_trace


def describe(preempt: Any) -> str:
    """A deterministic text of the ``preempt`` option, for the token's configuration hash."""
    if preempt == "lines":
        return "lines"
    items = [preempt] if isinstance(preempt, types.ModuleType) else list(preempt)
    return ",".join(sorted(getattr(m, "__name__", str(m)) for m in items))


def files_of(modules: Iterable[types.ModuleType]) -> list[str]:
    return [m.__file__ for m in modules if getattr(m, "__file__", None)]


def _controlled_run() -> Any:
    """The run of the calling thread if it is a controlled thread of a run that is not unwinding, else None.

    A thread of a run that is being stopped (a failure elsewhere, a replay that diverged, the supervisor's
    verdict) and that was not told yet is told here, once: ``Abort`` unwinds it as it does at any other point.
    Without that, a loop whose only points are its lines (``while not done: pass``) spun on, uncontrolled, for
    good: the supervisor left it behind after its watchdog, and the spinning thread slowed every later run in
    the process. Once told, its cleanup code (``finally`` blocks) runs without points."""
    run = runtime.current_run()
    rec = runtime.current_thread_record()
    if run is None or rec is None:
        return None
    if getattr(run, "aborting", False):
        if not rec.unwinding:
            unwind(rec)
        return None
    return run


# Tool ids nobody claims by convention first (3 and 4), then the named ones, which may simply be unused.
_TOOL_PREFERENCE = (3, 4, 5, 2, 1, 0)


def _free_tool_id() -> int | None:
    monitoring = sys.monitoring  # type: ignore[attr-defined]
    for tool in _TOOL_PREFERENCE:
        if monitoring.get_tool(tool) is None:
            return tool
    return None


def _codes_in(files: frozenset[str]) -> list[types.CodeType]:
    """Every code object of ``files`` reachable from a live function (nested code included), in a stable order."""
    seen: dict[types.CodeType, None] = {}
    pending: list[types.CodeType] = []
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__code__.co_filename in files:
            pending.append(obj.__code__)
    while pending:
        code = pending.pop()
        if code in seen:
            continue
        seen[code] = None
        pending.extend(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_filename in files)
    return list(seen)


_active: list[LineMonitor] = []  # the exploration's monitor while line points are on (3.12+)


def new_code(code: types.CodeType) -> None:
    """A function got new code during an exploration (``memory_install``): with line points on through
    ``sys.monitoring``, that code's lines (and those of the code nested in it) become points as the old code's were;
    the settrace backend sees any code of the files by itself."""
    for monitor in _active:
        pending = [code]
        while pending:
            one = pending.pop()
            monitor.add(one)
            pending.extend(c for c in one.co_consts if isinstance(c, types.CodeType))


class LineMonitor:
    """The ``sys.monitoring`` callbacks for one exploration (Python 3.12+)."""

    def __init__(self, files: Iterable[str], tool: int) -> None:
        self.files = frozenset(files)
        self.tool = tool
        self._stores: dict[types.CodeType, dict[int, str]] = {}
        self._lines: dict[types.CodeType, dict[int, int]] = {}
        self.codes: list[types.CodeType] = []

    def start(self) -> None:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        events = monitoring.events
        monitoring.use_tool_id(self.tool, "racecheck")
        monitoring.register_callback(self.tool, events.LINE, self.on_line)
        monitoring.register_callback(self.tool, events.JUMP, self.on_jump)
        monitoring.register_callback(self.tool, events.INSTRUCTION, self.on_instruction)
        self.codes = _codes_in(self.files)
        for code in self.codes:
            wanted = events.LINE | events.JUMP
            if _stores(code, self._stores):
                wanted |= events.INSTRUCTION
            monitoring.set_local_events(self.tool, code, wanted)

    def add(self, code: types.CodeType) -> None:
        """A code object that appeared during the exploration (memory watching's rewritten twin of a function):
        its lines are points too."""
        if code.co_filename in self.files and code not in self.codes:
            events = sys.monitoring.events  # type: ignore[attr-defined]
            self.codes.append(code)
            sys.monitoring.set_local_events(self.tool, code, events.LINE | events.JUMP)  # type: ignore[attr-defined]

    def stop(self) -> None:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        events = monitoring.events
        try:
            for code in self.codes:
                monitoring.set_local_events(self.tool, code, 0)
            for event in (events.LINE, events.JUMP, events.INSTRUCTION):
                monitoring.register_callback(self.tool, event, None)
            # What the callbacks switched off (DISABLE) is switched back on, or CPython keeps those instructions
            # uninstrumented for the other tools too (a later sys.settrace would see no opcode events there).
            monitoring.restart_events()
        finally:
            monitoring.free_tool_id(self.tool)

    def on_line(self, code: types.CodeType, line: int) -> Any:
        run = _controlled_run()
        if run is not None:
            run.touch(MEMORY)  # a line point marks the code on both sides of it
            run.schedule("line", access=MEMORY)
        return None

    def on_jump(self, code: types.CodeType, offset: int, destination: int) -> Any:
        """A backward jump within one line is a line point (as ``sys.settrace`` has it); any other jump location
        never is, so it is switched off for good (a jump instruction's destination is fixed)."""
        if destination > offset:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        lines = self._lines.get(code)
        if lines is None:
            lines = self._lines[code] = {}
            for start, end, line in code.co_lines():
                for at in range(start, end, 2):
                    lines[at] = line
        if lines.get(destination) != lines.get(offset):
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]  # the LINE event at the target covers it
        run = _controlled_run()
        if run is not None:
            run.touch(MEMORY)  # a line point marks the code on both sides of it
            run.schedule("line", access=MEMORY)
        return None

    def on_instruction(self, code: types.CodeType, offset: int) -> Any:
        text = self._stores[code].get(offset)
        if text is None:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]  # never a store: stop asking
        run = _controlled_run()
        if run is not None:
            run.touch(MEMORY)
            run.schedule(text, access=MEMORY)
        return None


def uses_monitoring() -> bool:
    """Whether line-level points use ``sys.monitoring`` here (3.12+) rather than ``sys.settrace``."""
    return sys.version_info >= (3, 12) and hasattr(sys, "monitoring")


@contextmanager
def tracing(files: Iterable[str]) -> Iterator[Any]:
    """Line-level points in ``files`` for the controlled threads of every run while the context is open."""
    if uses_monitoring():
        tool = _free_tool_id()
        if tool is None:
            raise RuntimeError("racecheck: preempt= needs a free sys.monitoring tool id, and all six are in use")
        monitor = LineMonitor(files, tool)
        monitor.start()
        _active.append(monitor)
        try:
            yield monitor
        finally:
            _active.remove(monitor)
            monitor.stop()
        return
    tracer = LineTracer(files)
    previous = threading.gettrace()
    threading.settrace(tracer.global_trace)
    try:
        yield tracer
    finally:
        threading.settrace(previous)  # type: ignore[arg-type]
