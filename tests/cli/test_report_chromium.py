"""The HTML report as a browser shows it: headless Chromium renders index.html of a real failing run, and the
failing schedule's lanes are there, in the DOM the browser built and in the pixels it painted.

Skips (with the reason) only when no Chromium is installed; `.ci/run` installs Debian's `chromium`.
Run as a script (`python tests/cli/test_report_chromium.py OUT.png`) to refresh docs/report-screenshot.png.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cli_helpers import invoke
from racecheck.report.html import LANE_COLOURS

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-dev-shm-usage", "--window-size=1400,900", *args],
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
def test_chromium_renders_the_failing_lanes(stub, tmp_path):
    page = _report(tmp_path / "rep")
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    lanes = re.findall(r'<div class="lane" data-thread="(T\d+)"', dom.stdout)
    assert lanes == ["T0", "T1", "T2"]  # the failing schedule's three threads, one lane each
    boxes = re.findall(r'<div class="op[^"]*" data-step="(\d+)"', dom.stdout)
    assert len(boxes) >= 9 and "lost update" in dom.stdout

    shot = tmp_path / "shot.png"
    painted = _chromium(f"--screenshot={shot}", page.as_uri())
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1400, 900)
    counts = {colour: 0 for colour in LANE_COLOURS[:3]}
    wanted = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)): c for c in LANE_COLOURS[:3]}
    for pixel in pixels:
        if pixel in wanted:
            counts[wanted[pixel]] += 1
    # every lane is painted: its label and its operation boxes in the lane's colour, thousands of pixels each
    assert all(count > 2000 for count in counts.values()), counts


if __name__ == "__main__":  # refresh the screenshot in the docs from a report directory: script OUT.png REPORT_DIR
    out, report = Path(sys.argv[1]), Path(sys.argv[2]) / "index.html"
    result = _chromium(f"--screenshot={out.resolve()}", report.resolve().as_uri())
    print(result.returncode, out)
