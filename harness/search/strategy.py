"""The base class of every exploration strategy: one chooser per execution, from a reproducible random stream.

Each strategy is a small object that hands out one *chooser* (``racecheck.runtime.chooser.Chooser``) per execution.
The run asks the chooser only where a real decision exists (more than one option), and records the answer in the
choice stream; a token is that stream. Options are ordered so that 0 is the simplest answer: for threads, index 0 is
"keep running the current thread" when it can run (no preemption), then the others by logical id. Shrinking
therefore means lowering choices.

Randomness comes from ``random.Random`` seeded with a string of (strategy, seed, schedule index): the same on every
machine and in every process (string seeds are hashed with SHA-512, not with the per-process hash seed).

The strategies themselves, one module each: ``random_walk``, ``pct``, ``dfs``, ``pos``; ``registry`` names them.
"""

from __future__ import annotations

import random
from _random import Random as _CoreRandom
from hashlib import sha512 as _sha512

from racecheck.runtime.chooser import Chooser

__racecheck_engine__ = True


class Strategy:
    """Hands out a chooser per execution (``new_execution``) and learns from each one that ended
    (``end_execution``); ``exhausted`` turns True when it has nothing left to try."""

    name = "base"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.exhausted = False
        self._rng = random.Random()

    def stream(self, text: str) -> random.Random:
        """The random stream of one execution, seeded by ``text`` (the same stream as ``random.Random(text)``).

        One generator re-seeded per execution rather than a new one: executions run one after another, and a new
        Mersenne Twister is a large block of fresh, cache-cold state per schedule, which was most of a schedule's
        strategy cost on a small workload. The previous execution's chooser is finished when this is called.

        ``Random.seed``'s own steps for a str, without its Python-level dispatch (the C seeding is the same call),
        so the stream is the one ``random.Random(text)`` gives: tests/engine/test_strategies_stream.py compares."""
        raw = text.encode()
        rng = self._rng
        _CoreRandom.seed(rng, int.from_bytes(raw + _sha512(raw).digest(), "big"))  # 3.10 has no default order
        rng.gauss_next = None
        return rng

    @property
    def no_proof(self) -> str:
        """Why a search that ran to its end proves nothing, in words for the verdict ('' where it is a proof)."""
        return ""

    @property
    def finished(self) -> bool:
        """Nothing is left to try. Usually the same as ``exhausted``; a strategy whose search a bound cut short is
        finished without having exhausted anything (``racecheck.search.dpor``)."""
        return self.exhausted

    def new_execution(self, index: int, sampled: bool = False) -> Chooser | None:
        """A chooser for schedule ``index``, or None when the strategy has nothing left to try. ``sampled``: the
        execution leaves code that showed no shared memory unwatched (``racecheck.control.memory_sampling``; only
        for a strategy whose registry entry ``samples_memory``): far fewer decisions than one watched whole, which a
        strategy measuring its executions keeps apart."""
        raise NotImplementedError

    def end_execution(self, chooser: Chooser, steps: int) -> None:
        """Learn from a finished execution (its number of scheduling steps)."""
