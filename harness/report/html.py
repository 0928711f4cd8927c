"""``index.html``: a summary table and, per failure, the shrunk failing schedule as a table of steps.

Steps run down the page and threads across it, as in the text trace (:mod:`racecheck.report.html_trace`), so a long
failure reads without scrolling sideways; the thread names stay in view while scrolling. The racing pair (when the
engine names one) and the data races are highlighted and linked from the summary. The page is one self-contained
file: inline CSS, no script, no font or image from the network, so it opens from a CI artifact or an e-mail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from racecheck.report import html_trace
from racecheck.report.html_trace import DATA_RACE_COLOUR, LANE_COLOURS, RACE_COLOUR, step_anchor
from racecheck.report.model import CellResult, FailureRecord
from racecheck.report.words import count

__racecheck_engine__ = True

__all__ = ["LANE_COLOURS", "NOT_A_RACE", "RACE_COLOUR", "render"]

_CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d2329; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 6px; }
h1, h2, p, li { overflow-wrap: anywhere; }
.meta { color: #5b6670; margin-bottom: 16px; }
table.summary { border-collapse: collapse; margin: 8px 0 16px; width: 100%; }
table.summary th, table.summary td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left;
  vertical-align: top; }
table.summary th { background: #f3f5f7; white-space: nowrap; }
table.summary td { overflow-wrap: break-word; } table.summary td code { overflow-wrap: anywhere; }
td.race, td.regression { color: #b3261e; font-weight: 600; } td.clean { color: #1a7f37; font-weight: 600; }
code, pre { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.token { word-break: break-all; background: #f3f5f7; padding: 2px 4px; }
pre { overflow-x: auto; max-width: 100%; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px;
  border-radius: 2px; }
ul.data-races li { margin: 4px 0; }
details { margin-top: 8px; }
"""

NOT_A_RACE = "fails under every schedule tried: not a race"


def _data_races(cell: CellResult) -> list[Any]:
    """The cell's data races (results.json's ``data_races`` entries or the engine's objects); none when absent."""
    return list(getattr(cell, "data_races", None) or [])


def _access(item: Any) -> str:
    field = html_trace.field
    return f"{field(item, 'thread', '?')} {field(item, 'op', '?')} @{field(item, 'location', '?')}"


def _pair_note(index: int, f: FailureRecord) -> str:
    """The failure's racing pair, each of its two steps linked to its row."""
    if f.not_a_race:
        return f'<p class="not-a-race"><b>{NOT_A_RACE}</b>: the order of the threads does not decide it</p>'
    if not f.race:
        return ""
    text = escape(f.race_text) if f.race_text else "racing pair"
    positions = html_trace.pair_positions(f)
    links = " and ".join(
        f'<a href="#{step_anchor(index, p)}">T{f.events[p][1]} {escape(str(f.events[p][2]))} (step '
        f'{escape(str(f.events[p][0]))})</a>' for p in positions
    )
    steps = f"<br>steps: {links}" if links else ""
    return (f'<p id="failure-{index}-pair"><span class="swatch" style="background:{RACE_COLOUR}"></span>'
            f"{text}{steps}</p>")


def _failure_section(index: int, cell: CellResult, f: FailureRecord, position: int, races: Sequence[Any]) -> str:
    """One failure of a cell (``position``: its number among the cell's distinct failures, 0 when alone)."""
    number = f" (failure {position} of {len(cell.failures)})" if position else ""
    shown = "".join(
        f'<li><span class="swatch" style="background:{DATA_RACE_COLOUR}"></span>data race {n}: '
        f'{escape(html_trace.describe(r))} at '
        + " and ".join(f'<a href="#{step_anchor(index, p)}">step {escape(str(f.events[p][0]))}</a>'
                       for p in html_trace.shown_in(f, r)) + "</li>"
        for n, r in enumerate(races, 1) if html_trace.shown_in(f, r)
    )
    shown = f'<ul class="data-races">{shown}</ul>' if shown else ""
    table = html_trace.trace_table(index, f, races) if f.events else ""
    return f"""
<section class="failure" id="failure-{index}">
<h2>{escape(cell.scenario)} [{escape(cell.fs)}] on <code>{escape(cell.target)}</code>{number}</h2>
<p><b>{escape(f.kind)}</b>{' in ' + escape(f.thread) if f.thread else ''}: {escape(f.message)}</p>
<p>schedule #{f.schedule_index}, {count(f.preemptions, 'preemption')}, {count(f.steps, 'step')},
{escape(cell.strategy)} seed {cell.seed}. Replay: <code class="token">racecheck replay {escape(f.token)}</code></p>
{_pair_note(index, f)}{shown}
<p class="legend"><span>rows: steps in schedule order</span><span>columns: logical threads (T0 runs the scenario)
</span><span><b style="color:#b3261e">&raquo;</b> preemption</span>{_legend(f, shown)}</p>
{table}
<details{'' if f.events else ' open'}><summary>trace as text</summary><pre>{escape(f.trace)}</pre></details>
</section>"""


def _legend(f: FailureRecord, data_races_shown: str) -> str:
    """The highlight colours this failure's table uses."""
    pair = f'<span><span class="swatch" style="background:{RACE_COLOUR}"></span>racing pair</span>'
    race = f'<span><span class="swatch" style="background:{DATA_RACE_COLOUR}"></span>data race</span>'
    return (pair if f.race and not f.not_a_race else "") + (race if data_races_shown else "")


def _races_section(number: int, cell: CellResult, races: Sequence[Any]) -> str:
    """Every data race of a cell, with its accesses, the schedule it showed in and the token that replays it."""
    field = html_trace.field
    items = []
    for n, race in enumerate(races, 1):
        first, second = field(race, "first"), field(race, "second")
        benign = " <i>(benign)</i>" if field(race, "benign") else ""
        items.append(
            f'<li id="data-race-{number}-{n}"><span class="swatch" style="background:{DATA_RACE_COLOUR}"></span>'
            f"<b>data race {n}</b>{benign}: {escape(html_trace.describe(race))}<br>first: {escape(_access(first))} "
            f"(step {escape(str(field(first, 'step', '?')))}), then: {escape(_access(second))} (step "
            f"{escape(str(field(second, 'step', '?')))}), in schedule #{escape(str(field(race, 'schedule', '?')))}. "
            f'Replay: <code class="token">{escape(str(field(race, "token", "")))}</code></li>'
        )
    return (f'<section class="data-races" id="data-races-{number}"><h2>Data races: {escape(cell.scenario)} '
            f'[{escape(cell.fs)}] on <code>{escape(cell.target)}</code></h2><ul class="data-races">{"".join(items)}'
            "</ul></section>")


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
    rows, sections = [], []
    failing = sections_count = 0
    for number, cell in enumerate(cells, 1):
        races = _data_races(cell)
        links = []
        if cell.failures:
            failing += 1
            first = sections_count + 1
            many = len(cell.failures) > 1
            for position, f in enumerate(cell.failures, 1):
                sections_count += 1
                sections.append(_failure_section(sections_count, cell, f, position if many else 0, races))
            label = {"race": "race found", "hang": "hang (not a race)"}.get(cell.verdict, NOT_A_RACE)
            if many:
                label += f" ({len(cell.failures)} distinct failures)"
            links.append(f'<a href="#failure-{first}">{escape(label)}</a>')
            if cell.failures[0].race and not cell.failures[0].not_a_race:
                links.append(f'<a href="#failure-{first}-pair">racing pair</a>')
            css = "race"
        else:
            extra = f" ({cell.exhausted_note})" if cell.exhausted else " (time budget)" if cell.budget_stopped else ""
            links.append(f"clean{escape(extra)}")
            css = "clean"
        if races:
            sections.append(_races_section(number, cell, races))
            links.append(f'<a href="#data-races-{number}">{count(len(races), "data race")}</a>')
        result = f'<td class="{css}">{" &middot; ".join(links)}</td>'
        gate = ""
        if verdicts:
            verdict = verdicts.get(cell.key, "")
            gate = f'<td class="{"clean" if verdict == "ok" else "regression"}">{escape(verdict)}</td>'
        rows.append(
            f"<tr><td>{escape(cell.scenario)}</td><td>{escape(cell.fs)}</td><td><code>{escape(cell.target)}</code>"
            f"</td><td>{escape(cell.strategy)} (seed {cell.seed})</td>"
            f"<td>{cell.schedules} ({count(cell.interleavings, 'interleaving')})</td>"
            f"<td>{cell.schedules_per_second:.1f}</td>{result}{gate}</tr>"
        )
    found = sum(1 for c in cells if c.verdict == "race")
    not_races = failing - found
    others = f", {not_races} failing under every schedule tried (not a race)" if not_races else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}{html_trace.CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<div class="meta">{escape(meta)} {count(len(cells), 'cell')}, {count(found, 'race')} found{others}.</div>
<table class="summary">{head}{"".join(rows)}</table>
{"".join(sections) if sections else "<p>No failing schedule.</p>"}
</body></html>
"""
