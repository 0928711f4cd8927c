"""Trace events and the per-thread table a person reads to understand a failing schedule.

One row per step, one column per logical thread (T0 is the test function, T1 the first thread it started, ...).
A row names the operation the thread performed and the source line that asked for it. Rows marked ``>>`` are
preemptions (the previous thread could have continued but was switched out): the context switches that matter.
Everything in a trace is logical (thread numbers, object numbers, repo-relative paths), never OS ids or addresses,
so the same schedule renders the same text on any machine.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

__racecheck_engine__ = True


class TraceEvent(NamedTuple):
    """One row of a trace. Immutable; a NamedTuple because one is created at every scheduling step (about three
    times cheaper to build than a frozen dataclass)."""

    step: int
    tid: int
    op: str
    loc: str
    switch: str = ""  # "" (same thread continues), "switch" (previous blocked/ended), "preempt", "info"
    # What the step touches (``racecheck.runtime.access.Access`` values), recorded by the operation that emits it;
    # a note's accesses belong to the step its thread is running. Never rendered: the trace text is the first five.
    access: tuple[Any, ...] = ()
    # The step's place among its thread's scheduling points (every point counts, memory accesses that joined a
    # running step included: ``Run.memory``), -1 when not known: what names the step in every schedule equivalent
    # to this one, however the steps of other threads cut it.
    at: int = -1
    # The point of each of the last ``len(marks)`` accesses: memory accesses made where no other thread could run,
    # which joined the step at a point of their own.
    marks: tuple[int, ...] = ()


def _running_step(trace: list[TraceEvent], tid: int) -> int:
    """The index of thread ``tid``'s running step in ``trace``: the last event that is not a note, if it is that
    thread's (only the running thread appends to a run's trace); -1 when there is none."""
    index = len(trace) - 1
    while index >= 0 and trace[index].switch == "info":
        index -= 1
    return index if index >= 0 and trace[index].tid == tid else -1


def add_access(trace: list[TraceEvent], tid: int, access: tuple[Any, ...]) -> None:
    """Thread ``tid``'s running step also touches ``access``: its event gains what it lacks, among the step's own
    accesses, so that the last ``len(marks)`` stay the merged ones their marks (and source lines) belong to (a yield
    noted after a step's merged accesses once put every line of them one access off)."""
    index = _running_step(trace, tid)
    if index < 0:
        return
    event = trace[index]
    have = event.access
    missing = tuple(a for a in access if a not in have)
    if missing:
        own = len(have) - len(event.marks)
        trace[index] = event._replace(access=have[:own] + missing + have[own:])


def set_access(trace: list[TraceEvent], tid: int, access: tuple[Any, ...]) -> None:
    """Thread ``tid``'s running step touched exactly ``access``, less than its point declared (``Run.narrow``); the
    memory accesses merged into it (``marks``) are other operations and stay."""
    index = _running_step(trace, tid)
    if index >= 0:
        event = trace[index]
        merged = event.access[len(event.access) - len(event.marks):] if event.marks else ()
        trace[index] = event._replace(access=tuple(access) + merged)


_path_cache: dict[tuple[str, str], str] = {}


def display_path(filename: str, module: str | None = None) -> str:
    """A machine- and sys.path-independent name for a source file, derived from its module's dotted name
    (``lightning/pytorch/plugins/io/async_plugin.py``); the bare file name for scripts and unknown modules."""
    key = (filename, module or "")
    cached = _path_cache.get(key)
    if cached is not None:
        return cached
    base = os.path.basename(filename)
    if module and module != "__main__" and base.endswith(".py"):
        parts = module.split(".")
        shown = "/".join(parts) + ("/__init__.py" if base == "__init__.py" else ".py")
    else:
        shown = base
    _path_cache[key] = shown
    return shown


def frame_path(frame: object) -> str:
    return display_path(frame.f_code.co_filename, frame.f_globals.get("__name__"))  # type: ignore[attr-defined]


_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def normalize_addresses(text: str) -> str:
    """Default reprs carry memory addresses ("<object at 0x7f3a...>"), different in every process; a trace shows
    them as ``0x_`` so the same schedule renders the same bytes anywhere."""
    return _ADDRESS.sub("0x_", text) if "0x" in text else text


def _cell(event: TraceEvent) -> str:
    text = f"{event.op}  @{event.loc}" if event.loc else event.op
    text = normalize_addresses(text)
    return f"  {text}" if event.switch == "info" else text


def render(events: list[TraceEvent], threads: int, outcome: str = "", max_width: int = 72) -> str:
    """The per-thread table: ``step | mark | T0 | T1 | ...``; ``>>`` marks a preemption.

    A cell longer than ``max_width`` wraps onto continuation rows (blank step) instead of being cut: the operation
    wraps at spaces, and its ``@file.py:line`` is never split, so every location stays copy-pasteable. A column is
    as wide as its widest piece, so a location longer than ``max_width`` widens its column rather than losing text.
    """
    columns = max(threads, 1 + max((e.tid for e in events), default=0))
    pieces = [_wrap(event, max_width) for event in events]
    widths = [2] * columns
    for event, lines in zip(events, pieces, strict=True):
        widths[event.tid] = max([widths[event.tid], *map(len, lines)])
    header = [f"T{i}" for i in range(columns)]
    lines = [_row("step", "  ", header, widths), _row("----", "--", ["-" * w for w in widths], widths)]
    for event, cell_lines in zip(events, pieces, strict=True):
        mark = ">>" if event.switch == "preempt" else ""
        step = "" if event.switch == "info" else str(event.step)
        for n, text in enumerate(cell_lines):
            cells = [""] * columns
            cells[event.tid] = text
            lines.append(_row(step if n == 0 else "", mark if n == 0 else "", cells, widths))
    if outcome:
        lines.append(normalize_addresses(outcome))
    return "\n".join(line.rstrip() for line in lines)


def _wrap(event: TraceEvent, width: int) -> list[str]:
    """The lines of one cell: the whole cell when it fits, else the operation wrapped at spaces (a word longer than
    the width is broken, it is not a location), followed by the location on the last line or a line of its own."""
    width = max(width, 16)  # room for the continuation indent, so breaking a word always makes progress
    text = _cell(event)
    if len(text) <= width:
        return [text]
    indent = "  " if event.switch == "info" else ""
    out: list[str] = []
    line = indent
    for word in normalize_addresses(event.op).split(" "):
        candidate = f"{line} {word}" if line.strip() else f"{line}{word}"
        if len(candidate) <= width or not line.strip():
            line = candidate
        else:
            out.append(line)
            line = f"{indent}  {word}"
        while len(line) > width:  # a single over-long word of the operation: break it, marking the break
            out.append(line[: width - 1] + "\\")
            line = f"{indent}  " + line[width - 1 :]
    location = f"@{event.loc}" if event.loc else ""
    if location and len(f"{line}  {location}") <= width:
        line = f"{line}  {location}"
        location = ""
    out.append(line)
    if location:
        out.append(f"{indent}  {location}")
    return out


def _row(step: str, mark: str, cells: list[str], widths: list[int]) -> str:
    body = " | ".join(_fit(c, w) for c, w in zip(cells, widths, strict=True))
    return f"{step:>4} {mark:2} | {body}"


def _fit(text: str, width: int) -> str:
    return text.ljust(width)
