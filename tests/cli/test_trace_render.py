"""The trace table never cuts a source location: long cells wrap onto continuation rows, columns stay aligned."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.runtime.trace import TraceEvent, render

words = st.text(alphabet=string.ascii_letters + string.digits + "/._->#", min_size=1, max_size=40)
ops = st.lists(words, min_size=1, max_size=8).map(" ".join)
locs = st.lists(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=30), min_size=1, max_size=6).map(
    lambda parts: "/".join(parts) + ".py:" + "123"
)


@st.composite
def traces(draw):
    threads = draw(st.integers(1, 4))
    events = []
    for step in range(draw(st.integers(1, 25))):
        events.append(TraceEvent(step, draw(st.integers(0, threads - 1)), draw(ops), draw(st.just("") | locs),
                                 draw(st.sampled_from(["", "switch", "preempt", "info"]))))
    return threads, events


@given(traces(), st.integers(10, 80))
@settings(max_examples=40, deadline=None)
def test_every_location_survives_whole_and_columns_align(trace, width):
    threads, events = trace
    text = render(events, threads, "-> ok", max_width=width)
    lines = text.splitlines()
    assert lines[-1] == "-> ok"
    table = lines[:-1]
    for event in events:
        if event.loc:
            assert any(f"@{event.loc}" in line for line in table), (event.loc, text)
    assert "~" not in text  # the old renderer cut cells with "~"
    separators = [i for i, ch in enumerate(table[0]) if ch == "|"]
    for line in table:
        assert [i for i, ch in enumerate(line) if ch == "|"][: len(separators)] == separators, text
    # the operation's words are all there too (a word wider than the column is broken with a backslash)
    for event in events:
        assert all(word in text for word in event.op.split(" ") if len(word) < width - 4), text


def test_long_lightning_location_is_kept_on_its_own_row():
    loc = "lightning/pytorch/plugins/io/async_plugin.py:77"
    events = [TraceEvent(0, 0, "begin", "t.py:1"), TraceEvent(1, 0, "acquire Executor#1.lock", loc),
              TraceEvent(2, 1, "fs.open /racefs/.tmp/tmp00000001 rwcx", "fsspec/implementations/local.py:404")]
    text = render(events, 2, max_width=40)
    assert f"@{loc}" in text and "~" not in text
    rows = text.splitlines()
    assert rows[3].split("|")[1].strip() == "acquire Executor#1.lock"
    assert rows[4].split("|")[0].strip() == "" and rows[4].split("|")[1].strip() == f"@{loc}"
