"""The benchmark's interval for the median of its pairs (benchmarks/bench_engine.py): the order statistics it
picks, and the coverage it claims, checked against a seeded simulation (the true median is known there)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_engine import median_interval  # noqa: E402


def test_nine_pairs_use_the_second_and_eighth_values():
    low, high, coverage = median_interval([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4, 0.5])
    assert (low, high) == (0.2, 0.8)
    assert coverage == pytest.approx(1 - 2 * 10 / 512)


@pytest.mark.parametrize("n", [5, 9, 15, 21])
def test_claimed_coverage_is_the_simulated_one(n):
    rng = random.Random(f"median-interval:{n}")
    claimed = median_interval(list(range(n)))[2]
    trials = 20_000
    covered = 0
    for _ in range(trials):
        low, high, _ = median_interval([rng.random() for _ in range(n)])
        covered += low <= 0.5 <= high  # the median of uniform(0, 1)
    assert abs(covered / trials - claimed) < 0.01
    assert claimed >= 0.95 or n < 6  # with six or more pairs the interval reaches the asked confidence
