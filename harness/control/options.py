"""What the control layer is told of an exploration: which modules, what is watched, how threads are carried.

The part of a ``racecheck.Config`` that decides how unmodified code comes under control, and nothing else: the
search layer hands it to the control layer's functions, and (for the processes of a run, later) it is what a child
process needs to install control the same way. Frozen and made of plain values, so it pickles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__racecheck_engine__ = True


@dataclass(frozen=True)
class ControlOptions:
    """How code comes under control (the fields of ``racecheck.Config`` of the same names)."""

    instrument: tuple[Any, ...] = ()  # modules or dotted names to control besides the test's own
    exclude: tuple[Any, ...] = ()  # modules or dotted names kept real
    memory: bool = True  # plain memory watched: every shared access a point
    sample_memory: bool = True  # sampled watching where the strategy samples (``memory_sampling``)
    preempt: Any = None  # "lines", or the modules whose every line is a point
    one_cpu: bool = True  # Linux: a schedule's controlled threads share one CPU
    fresh_threads: bool = False  # a new OS thread for every controlled thread
