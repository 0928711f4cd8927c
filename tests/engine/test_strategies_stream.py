"""The strategies' shortcuts around ``random`` draw exactly what ``random`` would: the per-execution stream is the
one ``random.Random(text)`` gives, and PCT's change points are the set ``Random.sample`` picks from the same
state, so every seed keeps its schedules (and the tests that pin them keep their meaning)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from racecheck.search.pct import PCT, change_points
from racecheck.search.random_walk import RandomWalk


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_reused_generator_is_reseeded_to_the_stream_a_fresh_one_would_give(text):
    strategy = RandomWalk(0)
    strategy.stream("something else first")
    rng = strategy.stream(text)
    assert rng.getstate() == random.Random(text).getstate()
    assert rng.random() == random.Random(text).random()


@given(st.integers(0, 2**32), st.integers(1, 200), st.integers(0, 8))
@settings(max_examples=500, deadline=None)
def test_change_points_are_the_set_sample_picks_with_the_same_draws(seed, decisions, count):
    count = min(count, decisions)
    mine, theirs = random.Random(seed), random.Random(seed)
    expected = frozenset(theirs.sample(range(1, decisions + 1), k=count))
    assert change_points(mine, decisions, count) == expected
    assert mine.getstate() == theirs.getstate()  # the stream goes on from the same place


def test_pct_executions_are_what_sample_based_setup_gave():
    """The first executions of a PCT strategy, against the former setup spelled out with ``random`` itself."""
    pct = PCT(seed=7, depth=4)
    pct.max_decisions = 30
    for index in range(50):
        chooser = pct.new_execution(index)
        rng = random.Random(f"pct:7:{index}:4")
        assert chooser.change_points == frozenset(rng.sample(range(1, 31), k=3))
        assert chooser.rng.getstate() == rng.getstate()
