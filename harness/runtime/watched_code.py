"""The code objects whose memory is watched: every function of every module memory watching rewrote
(``racecheck.control.memory_install`` adds them as it compiles a module, once per process).

A primitive asks it of its caller's code where what it records depends on whether the code around it is seen: a
blocking acquire made by watched code has its critical section's shared accesses in its steps, so dpor's
lock-aware reduction may leave it unordered against other such acquires (``racecheck.search.lock_aware``); one
made by code nothing watches (no source, an excluded module, the standard library, a stand-in's own) keeps the
lock as what stands for the memory it protects.
"""

from __future__ import annotations

import types

__racecheck_engine__ = True

CODES: set[types.CodeType] = set()


def add(codes: set[types.CodeType]) -> None:
    """A module's rewritten code came into use: its functions are watched code."""
    CODES.update(codes)
