"""A token's choices are trimmed of the zeros that end them, which the run that recorded it made by keeping its
thread; a replay of the token must keep it too past the end, even where the kept thread reads one value again and
again (the busy-wait hand-over is for runs that make new choices past their prefix: shrink probes, the warm-up).
Lightning's upstream plugin test diverged at step 3884 when token replays handed over from a loop iterating one
dict (``for k, v in self.__dict__.items()``)."""

from __future__ import annotations

import threading

import racecheck


def reader_finishes_first() -> None:
    box = {"x": 0, "done": False}
    seen = []

    def writer() -> None:
        box["x"] = 1
        seen.append(box["done"])

    t = threading.Thread(target=writer)
    t.start()
    for _ in range(20):  # the same read of box['x'] at every decision: looks like a spin, is not one here
        _ = box["x"]
    box["done"] = True
    t.join()
    assert seen == [False], "the writer ran after the reader was done"


def test_a_token_whose_tail_keeps_a_repeating_reader_replays_identically() -> None:
    found = racecheck.explore(reader_finishes_first, strategy="dfs", schedules=5, shrink_budget=0, race_budget=0)
    failure = found.failure
    assert failure is not None and failure.schedule_index == 0, found.summary()  # all zeros: the reader kept on
    again = racecheck.replay(reader_finishes_first, failure.token, race_budget=0)
    assert again.failure is not None and again.failure.trace == failure.trace
