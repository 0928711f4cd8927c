"""Line-level preemption, opt-in (``explore(..., preempt="lines")``): plain-Python data races without
``racecheck.point()``.

Normally only synchronisation, the fake filesystem and explicit delay hooks are scheduling points, so code between
them runs atomically. With line-level preemption every line executed in the chosen modules is a scheduling point,
and so is every store to shared state (an attribute, a subscript, a global, a closure cell) right before it takes
effect: ``self.n += 1`` reads, computes, then stores within one line, and the point before the store is where
another thread can slip in between the read and the write. Stores to local variables are not points (no other
thread can see them).

How: a trace function, installed with ``threading.settrace`` for the duration of the exploration, so every thread
started under control has it from its first instruction. It returns a local tracer only for frames whose code
belongs to a chosen module and whose thread is a controlled one, so everything else (the engine, the stdlib, other
threads) pays one cheap call per function call and nothing per line. On Python 3.12+, ``sys.monitoring`` would
cost less; ``sys.settrace`` still works there and is what this module uses everywhere, which keeps one behaviour
on every version. Tools that use ``sys.settrace`` themselves (coverage, debuggers) are suspended in controlled
threads while it runs.

Cost: see ``benchmarks/bench_strategies.py`` (schedules per second with and without).
"""

from __future__ import annotations

import dis
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime

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
            frame.f_trace_opcodes = True
        return self.local_trace

    def local_trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            run = runtime.current_run()
            if run is not None:
                run.schedule("line")
        elif event == "opcode":
            text = self._stores.get(frame.f_code, {}).get(frame.f_lasti)
            if text is not None:
                run = runtime.current_run()
                if run is not None:
                    run.schedule(text)
        return self.local_trace


def describe(preempt: Any) -> str:
    """A deterministic text of the ``preempt`` option, for the token's configuration hash."""
    if preempt == "lines":
        return "lines"
    items = [preempt] if isinstance(preempt, types.ModuleType) else list(preempt)
    return ",".join(sorted(getattr(m, "__name__", str(m)) for m in items))


def files_of(modules: Iterable[types.ModuleType]) -> list[str]:
    return [m.__file__ for m in modules if getattr(m, "__file__", None)]


@contextmanager
def tracing(files: Iterable[str]) -> Iterator[LineTracer]:
    """Line-level points in ``files`` for every thread started while the context is open."""
    tracer = LineTracer(files)
    previous = threading.gettrace() if sys.version_info >= (3, 10) else None
    threading.settrace(tracer.global_trace)
    try:
        yield tracer
    finally:
        threading.settrace(previous)  # type: ignore[arg-type]
