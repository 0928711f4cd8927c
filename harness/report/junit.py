"""``junit.xml``: one testcase per scenario x target x semantics, so any CI shows racecheck cells like tests.

A failing cell has one ``<failure>`` (CI views show one per testcase): its ``message`` carries the first failure's
message and replay token and says how many distinct failures there are; its body holds every distinct failure
(message, verdict when it is not a race, replay command, trace). A gate regression is a failure too
(``extra_failures``: cell key -> reason).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

from racecheck.report.model import CellResult, FailureRecord

__racecheck_engine__ = True

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    """Characters XML 1.0 cannot hold (NUL, most C0 controls, lone surrogates) become U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


NOT_A_RACE = "fails under every schedule tried: not a race"


def _text(f: FailureRecord) -> str:
    verdict = f"{NOT_A_RACE}\n" if f.not_a_race else ""
    race = f"{f.race_text}\n" if f.race_text else ""
    return f"{f.message}\n{verdict}replay with: racecheck replay {f.token}\n{race}\n{f.trace}\n"


def _message(cell: CellResult) -> str:
    f = cell.failures[0]
    lead = {"not-a-race": f"{NOT_A_RACE}: ", "hang": "hang (an uncontrolled wait, not a race): "}.get(cell.verdict, "")
    more = f"; {len(cell.failures)} distinct failures" if len(cell.failures) > 1 else ""
    return f"{lead}{f.message} (replay: racecheck replay {f.token}){more}"


def render(
    cells: Sequence[CellResult],
    suite: str = "racecheck",
    extra_failures: Mapping[tuple[str, str, str], str] | None = None,
) -> str:
    extra = extra_failures or {}
    root = ET.Element("testsuites")
    failures = sum(1 for c in cells if c.failure is not None or c.key in extra)
    node = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cells)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{sum(c.elapsed for c in cells):.3f}",
    )
    for cell in cells:
        case = ET.SubElement(
            node,
            "testcase",
            classname=f"racecheck.{cell.scenario}",
            name=_x(f"{cell.scenario}[{cell.fs}] {cell.target}"),
            time=f"{cell.elapsed:.3f}",
        )
        props = ET.SubElement(case, "properties")
        for key, value in (
            ("strategy", cell.strategy),
            ("seed", str(cell.seed)),
            ("schedules", str(cell.schedules)),
            ("schedules_per_s", f"{cell.schedules_per_second:.2f}"),
            ("interleavings", str(cell.interleavings)),
            *((("exhausted", cell.exhausted_note),) if cell.exhausted else ()),
            *((("distinct_failures", str(len(cell.failures))),) if cell.max_failures > 1 else ()),
            *((("verdict", cell.verdict),) if cell.failures else ()),
        ):
            ET.SubElement(props, "property", name=key, value=value)
        reason = extra.get(cell.key)
        if cell.failures:
            failure = ET.SubElement(case, "failure", message=_x(_message(cell)), type=_x(cell.failures[0].kind))
            lead = f"{reason}\n" if reason else ""
            many = len(cell.failures) > 1
            body = "\n".join(
                (f"[{i}/{len(cell.failures)}] " if many else "") + _text(f) for i, f in enumerate(cell.failures, 1)
            )
            failure.text = _x(f"{lead}{body}")
        elif reason:
            ET.SubElement(case, "failure", message=_x(reason), type="gate").text = _x(reason)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
