"""Busy-waiting on memory: a thread that makes the same read of memory at decision after decision while no other
thread runs can never see a new value until another thread runs (``while self.held: pass``).

A scheduler that keeps such a thread on (PCT's highest priority, a replay past its recorded choices, which keeps the
current thread) lets it spin to the step limit: a "livelock" no fair scheduler makes, 200,000 steps (~10 s) for an
exploration, the whole post-failure budget for a shrink probe. Where a thread is kept on at ``SPIN`` such decisions
in a row it is treated as a yielding one: PCT lowers it below everyone, a replay past its record hands over to the
next thread. Any bound catches a spin; a small one also moves off a thread that reads one value a few times in a row
for its own reasons (a switch there is one a strategy could make anyway), a large one costs each spin more steps.
"""

from __future__ import annotations

from racecheck.runtime.relation import LOOKS
from racecheck.runtime.steps import ObjKind

__racecheck_engine__ = True

SPIN = 8
_MEMORY = ObjKind.MEMORY


def spinning(access: tuple) -> bool:
    """Whether a step touching ``access``, repeated with no other thread run between, is a busy-wait: it reads
    memory and changes nothing."""
    return bool(access) and all(one.kind in LOOKS and one.obj.kind is _MEMORY for one in access)
