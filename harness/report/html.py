"""``index.html``: a summary table and, per failure, a swimlane timeline of the shrunk interleaving.

One lane per logical thread, one box per traced operation, placed left to right in schedule order, so a reader sees
which thread ran when and where the context switches that matter (preemptions, red edge) happened. When the
engine names the racing pair (``failure.race``), those two boxes are highlighted. The page is one self-contained
file: inline CSS, no script, no font or image from the network, so it opens from a CI artifact or an e-mail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from racecheck.report.model import CellResult, FailureRecord

__racecheck_engine__ = True

BOX = 124  # px per operation along the time axis
LANE_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"]
RACE_COLOUR = "#e15759"

_CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d2329; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 6px; }
.meta { color: #5b6670; margin-bottom: 16px; }
table.summary { border-collapse: collapse; margin: 8px 0 16px; }
table.summary th, table.summary td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; }
table.summary th { background: #f3f5f7; }
td.race, td.regression { color: #b3261e; font-weight: 600; } td.clean { color: #1a7f37; font-weight: 600; }
code, pre { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.token { word-break: break-all; background: #f3f5f7; padding: 2px 4px; }
.timeline { overflow-x: auto; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 0; background: #fbfcfd; }
.lane { display: flex; align-items: center; height: 66px; border-bottom: 1px dashed #e1e6eb; }
.lane:last-child { border-bottom: none; }
.lane-label { position: sticky; left: 0; z-index: 2; flex: 0 0 56px; height: 100%; display: flex;
  align-items: center; justify-content: center; font-weight: 700; color: #fff; }
.track { position: relative; height: 100%; flex: 0 0 auto; }
.op { position: absolute; top: 6px; height: 54px; box-sizing: border-box; padding: 2px 5px; border-radius: 4px;
  border: 2px solid rgba(0,0,0,.15); color: #fff; font-size: 11px; line-height: 1.25; overflow: hidden; }
.op .loc { display: block; opacity: .9; font-size: 10px; line-height: 1.15; word-break: break-all; }
.op .name { display: block; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.op.preempt { border-left: 6px solid #b3261e; }
.op.info { opacity: .6; }
.op.race { background: #e15759 !important; border: 3px solid #7a0d0d; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px;
  border-radius: 2px; }
details { margin-top: 8px; }
"""


def _lane_colour(tid: int) -> str:
    return LANE_COLOURS[tid % len(LANE_COLOURS)]


def _short(loc: str) -> str:
    """``file.py:line`` for the box (the full path is in the box's tooltip and the text trace)."""
    return loc.rsplit("/", 1)[-1]


def _race_keys(failure: FailureRecord) -> set[tuple[int, int]]:
    keys = set()
    for event in failure.race or ():
        try:
            keys.add((int(event[0]), int(event[1])))
        except (TypeError, ValueError, IndexError):
            continue
    return keys


def timeline(failure: FailureRecord) -> str:
    """The swimlane block of one failure."""
    events = failure.events
    lanes = 1 + max((int(e[1]) for e in events), default=0)
    race = _race_keys(failure)
    width = max(len(events), 1) * BOX
    boxes: dict[int, list[str]] = {tid: [] for tid in range(lanes)}
    for position, (step, tid, op, loc, switch) in enumerate(events):
        classes = ["op"]
        if switch == "preempt":
            classes.append("preempt")
        if switch == "info":
            classes.append("info")
        if (int(step), int(tid)) in race and switch != "info":
            classes.append("race")
        title = f"step {step} T{tid}: {op}" + (f" @{loc}" if loc else "")
        title += " (preemption)" if switch == "preempt" else ""
        boxes[int(tid)].append(
            f'<div class="{" ".join(classes)}" data-step="{escape(str(step))}" title="{escape(title)}" '
            f'style="left:{position * BOX + 2}px;width:{BOX - 4}px;background:{_lane_colour(int(tid))}">'
            f'<span class="name">{escape(str(op))}</span><span class="loc">{escape(_short(str(loc)))}</span></div>'
        )
    rows = []
    for tid in range(lanes):
        rows.append(
            f'<div class="lane" data-thread="T{tid}"><div class="lane-label" style="background:{_lane_colour(tid)}">'
            f'T{tid}</div><div class="track" style="width:{width}px">{"".join(boxes[tid])}</div></div>'
        )
    return f'<div class="timeline">{"".join(rows)}</div>'


NOT_A_RACE = "fails under every schedule tried: not a race"


def _failure_section(index: int, cell: CellResult, f: FailureRecord, position: int = 0) -> str:
    """One failure of a cell (``position``: its number among the cell's distinct failures, 0 when alone)."""
    race_note = ""
    if f.race:
        text = escape(f.race_text) if f.race_text else "racing pair: " + " and ".join(
            f"T{e[1]} {escape(str(e[2]))}" for e in f.race
        )
        race_note = f'<p><span class="swatch" style="background:{RACE_COLOUR}"></span>{text}</p>'
    if f.not_a_race:
        race_note = f'<p class="not-a-race"><b>{NOT_A_RACE}</b>: the order of the threads does not decide it</p>'
    number = f" (failure {position} of {len(cell.failures)})" if position else ""
    return f"""
<section class="failure" id="failure-{index}">
<h2>{escape(cell.scenario)} [{escape(cell.fs)}] on <code>{escape(cell.target)}</code>{number}</h2>
<p><b>{escape(f.kind)}</b>{' in ' + escape(f.thread) if f.thread else ''}: {escape(f.message)}</p>
<p>schedule #{f.schedule_index}, {f.preemptions} preemption(s), {f.steps} steps, {escape(cell.strategy)} seed
{cell.seed}. Replay: <code class="token">racecheck replay {escape(f.token)}</code></p>
{race_note}
<p class="legend"><span><span class="swatch" style="background:#ccc;border-left:4px solid #b3261e"></span>preemption
</span><span>lanes: logical threads (T0 runs the scenario)</span><span>left to right: schedule order</span></p>
{timeline(f)}
<details><summary>trace as text</summary><pre>{escape(f.trace)}</pre></details>
</section>"""


def render(
    cells: Sequence[CellResult],
    title: str = "racecheck report",
    meta: str = "",
    verdicts: Mapping[tuple[str, str, str], str] | None = None,
) -> str:
    """The page. ``verdicts`` (from the gate) adds a column: cell key -> "ok" or the regression's reason."""
    verdicts = verdicts or {}
    head = "<tr><th>scenario</th><th>semantics</th><th>target</th><th>strategy</th><th>schedules</th>" \
           "<th>schedules/s</th><th>result</th>" + ("<th>gate</th>" if verdicts else "") + "</tr>"
    rows = []
    failing = 0
    sections = []
    sections_count = 0
    for cell in cells:
        if cell.failures:
            failing += 1
            first = sections_count + 1
            many = len(cell.failures) > 1
            for position, f in enumerate(cell.failures, 1):
                sections_count += 1
                sections.append(_failure_section(sections_count, cell, f, position if many else 0))
            label = "race found" if cell.verdict == "race" else NOT_A_RACE
            if many:
                label += f" ({len(cell.failures)} distinct failures)"
            result = f'<td class="race"><a href="#failure-{first}">{escape(label)}</a></td>'
        else:
            extra = f" ({cell.exhausted_note})" if cell.exhausted else " (time budget)" if cell.budget_stopped else ""
            result = f'<td class="clean">clean{extra}</td>'
        gate = ""
        if verdicts:
            verdict = verdicts.get(cell.key, "")
            css = "clean" if verdict == "ok" else "regression"
            gate = f'<td class="{css}">{escape(verdict)}</td>'
        rows.append(
            f"<tr><td>{escape(cell.scenario)}</td><td>{escape(cell.fs)}</td><td><code>{escape(cell.target)}</code>"
            f"</td><td>{escape(cell.strategy)} (seed {cell.seed})</td>"
            f"<td>{cell.schedules} ({cell.interleavings} interleavings)</td>"
            f"<td>{cell.schedules_per_second:.1f}</td>{result}{gate}</tr>"
        )
    races = sum(1 for c in cells if c.verdict == "race")
    not_races = failing - races
    others = f", {not_races} failing under every schedule tried (not a race)" if not_races else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<div class="meta">{escape(meta)} {len(cells)} cell(s), {races} race(s) found{others}.</div>
<table class="summary">{head}{"".join(rows)}</table>
{"".join(sections) if sections else "<p>No failing schedule.</p>"}
</body></html>
"""
