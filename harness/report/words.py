"""Counted nouns as people write them: ``1 preemption``, ``2 preemptions``, never ``1 preemptions`` or
``2 preemption(s)``. Every frontend and report counts through :func:`count`, so the words agree everywhere."""

from __future__ import annotations

__racecheck_engine__ = True

IRREGULAR = {"class": "classes", "this": "these"}


def plural(word: str) -> str:
    """The plural of ``word`` (the nouns racecheck counts: schedule, preemption, step, failure, class, ...)."""
    return IRREGULAR.get(word, word + "s")


def count(number: int, word: str, many: str | None = None) -> str:
    """``number`` and ``word`` agreeing: ``count(1, "step")`` -> ``1 step``; ``many`` overrides the plural."""
    return f"{number} {word if number == 1 else (many or plural(word))}"
