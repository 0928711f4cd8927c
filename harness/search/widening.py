"""A sampled run's decisions, run again with every memory access watched (``racecheck.control.memory_sampling``).

A sampled run left some code unwatched, so its decisions are not a token anyone could replay: a replay watches
everything, and every access of that code where another thread could run is a decision more. ``Widening`` plays
the sampled run's decisions at the decisions it had, checking that each picks the thread it picked, and keeps the
running thread at each decision an access of the unwatched code makes (``Run.cold_point``), which is what the
sampled run did there by having no decision at all. The widened run is the same execution, watched whole: its
choices are the token that is reported, shrunk and replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.runtime.chooser import Decision
from racecheck.search.replay import Replayer

__racecheck_engine__ = True


class Widening(Replayer):
    """The decisions of a sampled run (``choices``, ``picked``), with the decisions of ``cold`` code's accesses
    added as "keep the running thread"."""

    def __init__(self, choices: Sequence[int], picked: Sequence[int], cold: frozenset[Any]) -> None:
        super().__init__(choices, picked)
        self.cold_codes = cold

    def fresh(self) -> Widening:
        return Widening(self.made[0], self.made[1], self.cold_codes)

    def pick_thread(self, decision: Decision) -> int:
        current = decision.current
        if current is not None and current == decision.view.cold_point and decision.current_enabled:
            return 0
        return super().pick_thread(decision)
