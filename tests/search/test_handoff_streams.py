"""Streams handed to code racecheck does not watch are written (``control.handoff_streams``): two threads writing one
``StringIO`` or ``BytesIO`` (its ``write``, ``print(file=)``, ``json.dump``, ``pickle.dump``) leave the output in
either order, and dpor must reach both orders, as unbounded dfs does, instead of proving one (it did: a stream's
state is C state, and a walk found nothing in it to record). Streams of their own stay independent, and methods
that only look (``getvalue``) do not order two readers."""

from __future__ import annotations

import io
import json
import pickle
import threading

import pytest
import racecheck
from racecheck.control import handoff_streams

WRITERS = {
    "write": lambda buf, x: buf.write(x),
    "print": lambda buf, x: print(x, file=buf, end=""),
    "json.dump": lambda buf, x: json.dump(x, buf),
    "pickle.dump": lambda buf, x: pickle.dump(x, buf),
}


def _two_writers(how: str, shared: bool):
    write = WRITERS[how]
    binary = how == "pickle.dump"

    def program():
        streams = [io.BytesIO() if binary else io.StringIO() for _ in range(1 if shared else 2)]
        threads = [threading.Thread(target=write, args=(streams[i % len(streams)], x)) for i, x in enumerate("ab")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        first = streams[0].getvalue()
        assert first.startswith(pickle.dumps("a") if binary else ('"a"' if how == "json.dump" else "a")), first

    return program


def _outcome(strategy: str, program) -> tuple[bool, bool]:
    result = racecheck.explore(program, strategy=strategy, schedules=200, shrink_budget=0, race_budget=0)
    return result.failure is not None, result.coverage.space == "exhausted"


@pytest.mark.parametrize("how", sorted(WRITERS))
def test_two_threads_writing_one_stream_are_ordered_both_ways(how):
    program = _two_writers(how, shared=True)
    assert _outcome("dfs", program)[0], "the reference finds the other order"
    found, _ = _outcome("dpor", program)
    assert found, f"dpor proved one order of two writes to one stream ({how})"


def test_streams_of_their_own_stay_independent():
    result = racecheck.explore(_two_writers("write", shared=False), strategy="dpor", schedules=200)
    assert result.ok and result.coverage.space == "exhausted", result
    assert result.schedules <= 2, result.schedules


def test_methods_that_only_look_do_not_order_two_readers(monkeypatch):
    assert {"getvalue", "tell"} <= handoff_streams.LOOKS_ONLY

    def program():
        buf = io.StringIO("x")
        seen = [None, None]

        def look(i):
            seen[i] = buf.getvalue()

        threads = [threading.Thread(target=look, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    result = racecheck.explore(program, strategy="dpor", schedules=200)
    assert result.ok and result.coverage.space == "exhausted", result
    looked = result.schedules
    monkeypatch.setattr(handoff_streams, "LOOKS_ONLY", frozenset())  # getvalue a write: the readers are ordered
    assert racecheck.explore(program, strategy="dpor", schedules=200).schedules > looked


def test_planted_streams_record_nothing_and_dpor_proves_one_order(monkeypatch):
    monkeypatch.setattr(handoff_streams, "touched", lambda watch, stream, how, label: ())
    found, exhausted = _outcome("dpor", _two_writers("print", shared=True))
    assert not found and exhausted  # the false proof this module exists to prevent
