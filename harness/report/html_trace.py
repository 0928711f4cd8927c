"""The failing schedule in ``index.html`` as the text trace shows it: steps down, one column per thread.

A 40-step failure then reads top to bottom at any width: columns share the page's width, every label wraps (a long
location breaks anywhere, nothing is cut), the header row of thread names sticks to the top of the window while the
steps scroll under it, and a preemption (the context switch that matters) marks its row. The racing pair's two steps
and the steps of any data race seen in this very schedule are highlighted, and each has an anchor
(``failure-N-step-I``, I the event's index in the trace) that the summary and the failure's head link to.

Data races arrive as ``results.json`` writes them (``{"obj", "first": {"thread", "op", "location", "step"},
"second", "schedule", "token", "benign"}``) or as the engine's ``DataRace`` objects; both read the same here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from racecheck.report.model import FailureRecord

__racecheck_engine__ = True

LANE_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"]
RACE_COLOUR = "#e15759"
DATA_RACE_COLOUR = "#f1a340"

CSS = """
table.trace { width: 100%; table-layout: fixed; border-collapse: separate; border-spacing: 0; margin: 8px 0;
  font-size: 12px; }
table.trace th { position: sticky; top: 0; z-index: 2; background: #fff; text-align: left; padding: 6px 8px;
  border-bottom: 2px solid #d0d7de; font-size: 13px; }
table.trace th.thread { border-top: 6px solid var(--lane); }
table.trace col.step { width: 72px; }
table.trace td { padding: 3px 8px; vertical-align: top; border-bottom: 1px solid #eef1f4;
  overflow-wrap: anywhere; word-break: break-word; }
table.trace td.step { color: #5b6670; font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; white-space: nowrap; }
table.trace td.op { border-left: 4px solid var(--lane); background: #f6f8fa;
  background: color-mix(in srgb, var(--lane) 10%, #fff); }
table.trace .name { display: block; font-weight: 600; }
table.trace .loc { display: block; color: #5b6670; font: 11px/1.35 ui-monospace, Menlo, Consolas, monospace; }
table.trace tr.preempt td { border-top: 2px solid #b3261e; }
table.trace tr.preempt td.step { color: #b3261e; font-weight: 700; }
table.trace tr.info td.op { opacity: .6; }
table.trace td.op.race { background: #fde2e1; border-left-color: #b3261e; box-shadow: inset 0 0 0 2px #e15759; }
table.trace td.op.data-race { box-shadow: inset 0 0 0 2px #f1a340; }
table.trace td.op.race.data-race { box-shadow: inset 0 0 0 2px #e15759, inset 0 0 0 4px #f1a340; }
table.trace .badge { display: inline-block; margin-top: 2px; padding: 0 5px; border-radius: 8px; color: #fff;
  font-size: 10px; font-weight: 700; }
table.trace .badge.race { background: #b3261e; } table.trace .badge.data-race { background: #b76e00; }
table.trace tr:target td { outline: 2px solid #1d2329; outline-offset: -2px; }
"""


def lane_colour(tid: int) -> str:
    return LANE_COLOURS[tid % len(LANE_COLOURS)]


def step_anchor(index: int, position: int) -> str:
    """The anchor of the ``position``-th event of failure ``index``'s trace."""
    return f"failure-{index}-step-{position}"


def field(item: Any, name: str, default: Any = None) -> Any:
    """``item[name]`` or ``item.name``: a data race from results.json or from the engine."""
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)


def pair_positions(failure: FailureRecord) -> list[int]:
    """Where in the trace the racing pair's two events are (positions), in trace order; none when not named."""
    wanted = []
    for event in failure.race or ():
        try:
            wanted.append((int(event[0]), int(event[1])))
        except (TypeError, ValueError, IndexError):
            continue
    found = []
    for position, event in enumerate(failure.events):
        key = (int(event[0]), int(event[1]))
        if key in wanted and event[4] != "info" and position not in found:
            found.append(position)
            wanted.remove(key)
    return found


def shown_in(failure: FailureRecord, race: Any) -> list[int]:
    """The trace positions of a data race's two accesses when it was seen in this failure's own schedule (its
    token is the failure's), else none: a data race's steps index the trace of the schedule it names."""
    token = field(race, "token")
    if not token or token not in (failure.engine_token, failure.token):
        return []
    positions = []
    for access in (field(race, "first"), field(race, "second")):
        try:
            step = int(field(access, "step"))
        except (TypeError, ValueError):
            continue
        if 0 <= step < len(failure.events):
            positions.append(step)
    return positions


def describe(race: Any) -> str:
    """The data race's one line: the engine's ``describe()`` when it is the engine's object, else the same words
    built from results.json's fields."""
    if hasattr(race, "describe"):
        return str(race.describe())

    def access(which: str) -> str:
        part = field(race, which) or {}
        return f"{field(part, 'thread', '?')} {field(part, 'op', '?')} @{field(part, 'location', '?')}"

    benign = " (benign)" if field(race, "benign") else ""
    return f"data race on {field(race, 'obj', '?')}: {access('first')} and {access('second')}{benign}"


def lane_names(failure: FailureRecord) -> dict[int, str]:
    """Each lane's heading: ``T2`` for a thread of the test's process, ``T2 (P1.T0)`` for a thread of a child
    process, as the failure's ``lanes`` name them (the run's registry of processes: never read from the trace's
    words, which the program's own operations and thread names could imitate)."""
    names: dict[int, str] = {}
    for thread, label in failure.lanes.items():
        if thread[:1] == "T" and thread[1:].isdigit():
            names[int(thread[1:])] = f"{thread} ({label})"
    return names


def trace_table(index: int, failure: FailureRecord, data_races: Sequence[Any] = ()) -> str:
    """The steps-down table of failure ``index`` (its section is ``failure-index``)."""
    events = failure.events
    threads = 1 + max((int(e[1]) for e in events), default=0)
    pair = set(pair_positions(failure))
    marked: dict[int, list[int]] = {}  # position -> numbers (1-based) of the data races seen there
    for number, race in enumerate(data_races, 1):
        for position in shown_in(failure, race):
            marked.setdefault(position, []).append(number)
    names = lane_names(failure)
    head = "".join(
        f'<th class="thread" data-thread="T{tid}" style="--lane:{lane_colour(tid)}">'
        f'{escape(names.get(tid, f"T{tid}"))}</th>'
        for tid in range(threads)
    )
    rows = []
    for position, (step, tid, op, loc, switch) in enumerate(events):
        tid = int(tid)
        classes = ["op"] + (["race"] if position in pair else []) + (["data-race"] if position in marked else [])
        badges = '<span class="badge race">racing pair</span>' if position in pair else ""
        badges += "".join(f'<span class="badge data-race">data race {n}</span>' for n in marked.get(position, ()))
        title = f"step {step} T{tid}: {op}" + (f" @{loc}" if loc else "") + (" (preemption)" if switch == "preempt"
                                                                             else "")
        cell = (f'<td class="{" ".join(classes)}" style="--lane:{lane_colour(tid)}" title="{escape(title)}">'
                f'<span class="name">{escape(str(op))}</span><span class="loc">{escape(str(loc))}</span>{badges}</td>')
        cells = ["<td></td>"] * threads
        cells[tid] = cell
        row_class = {"preempt": ' class="preempt"', "info": ' class="info"'}.get(str(switch), "")
        mark = " &raquo;" if switch == "preempt" else ""
        rows.append(f'<tr id="{step_anchor(index, position)}"{row_class} data-step="{escape(str(step))}">'
                    f'<td class="step">{escape(str(step))}{mark}</td>{"".join(cells)}</tr>')
    cols = '<col class="step">' + "<col>" * threads
    return (f'<table class="trace"><colgroup>{cols}</colgroup><thead><tr><th class="step">step</th>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>')
