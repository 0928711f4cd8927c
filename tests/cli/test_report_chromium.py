"""The HTML report as a browser shows it: headless Chromium renders index.html of a real failing run (its threads'
columns are there, in the DOM the browser built and in the pixels it painted), and lays out a 40-step, 3-thread
failure with long labels at a 1280 px window: measured from the element boxes the browser computed (a script added
to a copy of the page writes them into the DOM), nothing is wider than the window, no label is cut, the thread
names stay in view when the steps scroll, and the racing pair's and the data race's steps carry their highlight.

Skips (with the reason) only when no Chromium is installed; `.ci/run` installs Debian's `chromium`.
Run as a script (`python tests/cli/test_report_chromium.py OUT.png REPORT_DIR`) to refresh
docs/report-screenshot.png from a report directory.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cli_helpers import invoke
from racecheck.report import html
from racecheck.report.html import LANE_COLOURS
from racecheck.report.model import CellResult, FailureRecord

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def _chromium(*args: str, size: str = "1280,900") -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-dev-shm-usage", f"--window-size={size}", *args],
        capture_output=True, text=True, timeout=120,
    )


def _png_pixels(path: Path) -> tuple[int, int, list[tuple[int, int, int]]]:
    """A tiny PNG decoder (8-bit RGB/RGBA, non-interlaced: what Chromium writes), so the test needs no Pillow."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        filt, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    pixels = [tuple(row[x * channels : x * channels + 3]) for row in rows for x in range(width)]
    return width, height, pixels


def _report(directory: Path) -> Path:
    out = invoke("run", "lost-update", "--schedules", "200", "--report", str(directory), "-q")
    assert out.exit_code == 1, out.output
    return directory / "index.html"


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")
def test_chromium_renders_the_failing_threads_columns(stub, tmp_path):
    page = _report(tmp_path / "rep")
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    threads = re.findall(r'<th class="thread" data-thread="(T\d+)"', dom.stdout)
    assert threads == ["T0", "T1", "T2"]  # the failing schedule's three threads, one column each
    rows = re.findall(r'<tr id="failure-1-step-\d+"', dom.stdout)
    assert len(rows) >= 9 and "lost update" in dom.stdout
    assert len(re.findall(r'<td class="op race', dom.stdout)) == 2  # the racing pair the engine named

    shot = tmp_path / "shot.png"
    painted = _chromium(f"--screenshot={shot}", page.as_uri())
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1280, 900)
    counts = {colour: 0 for colour in LANE_COLOURS[:3]}
    wanted = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)): c for c in LANE_COLOURS[:3]}
    for pixel in pixels:
        if pixel in wanted:
            counts[wanted[pixel]] += 1
    # every thread is painted in its colour: its header's band and its steps' edges, a thousand pixels and more
    assert all(count > 1000 for count in counts.values()), counts


LONG_OPS = ["write Cache#1._value_of_a_rather_long_attribute_name['checkpoint/epoch=3-step=1200.ckpt']",
            "read dict#2['a_key_that_is_longer_than_any_column_could_ever_be_wide_enough_to_hold_on_one_line']",
            "acquire Lock#3", "open /tmp/pytest-of-someone/pytest-12/test_async_checkpoint0/checkpoints/last.ckpt"]


def _forty_steps() -> CellResult:
    """A hand-made failure: 40 steps over 3 threads, long operations and locations, a preemption every 7 steps,
    the racing pair at steps 11 and 29, a data race seen in this schedule at steps 5 and 17 and one in another."""
    events = []
    for step in range(40):
        tid = 0 if step in (0, 1, 2, 39) else 1 + (step // 3) % 2
        loc = f"src/some_package/with/a/deeply/nested/module_number_{step}/implementation_file.py:{100 + step}"
        switch = "preempt" if step % 7 == 3 else ""
        events.append([step, tid, LONG_OPS[step % len(LONG_OPS)], loc, switch])
    race = [events[11][:4] + ["race"], events[29][:4] + ["race"]]
    record = FailureRecord("exception", "AssertionError: assert cache.value == 2 (test_cache.py:40): assert 1 == 2",
                           17, 2, 40, "(the text trace)", "rc1.engine", token="rcc1.cli", thread="T0", events=events,
                           race=race, race_text="racing pair on Cache#1._value: T1 write ... raced with T2 read ...")
    cell = CellResult("settings-cache", "my_project.settings:LazySettings", "posix", "pct", 0, 1000, 18, 18, 0.5,
                      interleavings=9, failure=record)
    first = {"thread": "T2", "op": "write", "location": "implementation_file.py:105", "step": 5}
    second = {"thread": "T1", "op": "read", "location": "implementation_file.py:117", "step": 17}
    cell.data_races = [
        {"obj": "Cache#1._value", "first": first, "second": second, "schedule": 17, "token": "rc1.engine",
         "benign": False},
        {"obj": "dict#2['k']", "first": second, "second": first, "schedule": 3, "token": "rc1.other", "benign": True},
    ]
    return cell


MEASURE = """<script>
const out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth};
const labels = document.querySelectorAll("table.trace th, table.trace td, table.trace .name, table.trace .loc, "
                                         + "table.summary td, h2, p");
out.labels = labels.length;
out.clipped = [...labels].filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent.slice(0, 80));
out.cut = [...labels].filter(e => getComputedStyle(e).textOverflow === "ellipsis").length;
const header = document.querySelector("table.trace th.thread");
const before = header.getBoundingClientRect().top;
document.getElementById("failure-1-step-30").scrollIntoView({block: "center"});
out.scrollY = window.scrollY;
out.header = [before, header.getBoundingClientRect().top, header.getBoundingClientRect().bottom,
              window.innerHeight];
const race = [...document.querySelectorAll("td.op.race")];
out.race = race.map(e => e.closest("tr").id);
out.raceBackground = race.map(e => getComputedStyle(e).backgroundColor);
out.plainBackground = getComputedStyle(document.querySelector("td.op:not(.race)")).backgroundColor;
out.dataRace = [...document.querySelectorAll("td.op.data-race")].map(e => [e.closest("tr").id,
                                                                           getComputedStyle(e).boxShadow]);
out.pairLinks = [...document.querySelectorAll("#failure-1-pair a")].map(a => a.getAttribute("href"));
out.summaryLinks = [...document.querySelectorAll("table.summary a")].map(a => a.getAttribute("href"));
document.body.insertAdjacentHTML("beforeend", "<pre id='measured'>" + JSON.stringify(out) + "</pre>");
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")
def test_a_40_step_3_thread_failure_reads_without_sideways_scrolling_at_1280_px(tmp_path):
    page = tmp_path / "index.html"
    page.write_text(html.render([_forty_steps()]).replace("</body>", MEASURE + "</body>"))
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r"<pre id=\"measured\">(.*?)</pre>", dom.stdout, re.S)
    assert found, dom.stdout[-3000:]
    out = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                     .replace("&gt;", ">"))
    assert out["innerWidth"] == 1280
    assert out["scrollWidth"] <= 1280, out  # no horizontal scrolling
    assert out["labels"] > 150 and out["clipped"] == [] and out["cut"] == 0, out  # whole labels: wrapped, not cut
    top_before, top, bottom, window_height = out["header"]
    assert out["scrollY"] > top_before  # scrolled past where the header row first was...
    assert 0 <= top < 2 and bottom <= window_height, out  # ...and the thread names stuck to the top of the window
    assert out["race"] == ["failure-1-step-11", "failure-1-step-29"]
    assert set(out["raceBackground"]) == {"rgb(253, 226, 225)"} and out["plainBackground"] not in out["raceBackground"]
    assert [row for row, _ in out["dataRace"]] == ["failure-1-step-5", "failure-1-step-17"]
    assert all("rgb(241, 163, 64)" in shadow for _, shadow in out["dataRace"]), out["dataRace"]
    assert out["pairLinks"] == ["#failure-1-step-11", "#failure-1-step-29"]
    assert out["summaryLinks"] == ["#failure-1", "#failure-1-pair", "#data-races-1"]


if __name__ == "__main__":  # refresh the screenshot in the docs from a report directory: script OUT.png REPORT_DIR
    out, report = Path(sys.argv[1]), Path(sys.argv[2]) / "index.html"
    result = _chromium(f"--screenshot={out.resolve()}", report.resolve().as_uri(), size="1280,1300")
    print(result.returncode, out)
