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
from dataclasses import dataclass

__racecheck_engine__ = True


@dataclass(frozen=True)
class TraceEvent:
    step: int
    tid: int
    op: str
    loc: str
    switch: str = ""  # "" (same thread continues), "switch" (previous blocked/ended), "preempt", "info"


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
    """The per-thread table: ``step | mark | T0 | T1 | ...``; ``>>`` marks a preemption."""
    columns = max(threads, 1 + max((e.tid for e in events), default=0))
    widths = [2] * columns
    for event in events:
        widths[event.tid] = min(max(widths[event.tid], len(_cell(event))), max_width)
    header = [f"T{i}" for i in range(columns)]
    lines = [_row("step", "  ", header, widths), _row("----", "--", ["-" * w for w in widths], widths)]
    for event in events:
        cells = [""] * columns
        cells[event.tid] = _cell(event)
        mark = ">>" if event.switch == "preempt" else ""
        step = "" if event.switch == "info" else str(event.step)
        lines.append(_row(step, mark, cells, widths))
    if outcome:
        lines.append(normalize_addresses(outcome))
    return "\n".join(line.rstrip() for line in lines)


def _row(step: str, mark: str, cells: list[str], widths: list[int]) -> str:
    body = " | ".join(_fit(c, w) for c, w in zip(cells, widths, strict=True))
    return f"{step:>4} {mark:2} | {body}"


def _fit(text: str, width: int) -> str:
    if len(text) <= width:
        return text.ljust(width)
    return text[: width - 1] + "~"
