"""Busy-waiting on memory: a thread that makes the same read of memory at decision after decision while no other
thread runs can never see a new value until another thread runs (``while self.held: pass``).

A scheduler that keeps such a thread on (PCT's highest priority, a replay past its recorded choices, which keeps the
current thread) lets it spin to the step limit: a "livelock" no fair scheduler makes, 200,000 steps (~10 s) for an
exploration, the whole post-failure budget for a shrink probe. Where a thread is kept on at ``SPIN`` such decisions
in a row it is treated as a yielding one: PCT lowers it below everyone, a replay past its record hands over to the
next thread. Any bound catches a spin; a small one also moves off a thread that reads one value a few times in a row
for its own reasons (a switch there is one a strategy could make anyway), a large one costs each spin more steps.

A sampled run sees only the accesses of the code it watches, so "the same read at decision after decision" there
also describes a thread that calls a watched getter from unwatched code again and again, making progress between.
Taken for a spin, the thread was lowered each time: torch.distributed's helpers read ``_World._default_pg`` through
a watched property 10-16 times in a row in DCP's ``async_save``, so every sampled pct run lowered the trainer's
thread below the executor's worker and the checkpoint daemon, and the preemption the two-daemon race needs never
happened ("ok" after 1,000 schedules; watched whole, found at 2-5). Where the learning runs saw a read made again
after unwatched code, a sampled run takes it for a spin only at ``SPIN_ACROSS_UNWATCHED`` repeats.
"""

from __future__ import annotations

from typing import Any

from racecheck.runtime.relation import LOOKS
from racecheck.runtime.steps import ObjKind

__racecheck_engine__ = True

SPIN = 8
# In a sampled run (``racecheck.control.memory_sampling``) a read that its learning runs saw made again after accesses
# of the code the run leaves unwatched (``RunView.recurring``: a getter that unwatched helpers call one after another)
# comes back at decision after decision with the helpers' work between unseen: it is taken for a busy-wait only at
# this many repeats, far more than such helpers were seen to make in a row (16 in torch.distributed) and far below
# the step limit, so that a real spin on such a read still ends.
SPIN_ACROSS_UNWATCHED = 1024
_MEMORY = ObjKind.MEMORY


def spinning(access: tuple) -> bool:
    """Whether a step touching ``access``, repeated with no other thread run between, is a busy-wait: it reads
    memory and changes nothing."""
    return bool(access) and all(one.kind in LOOKS and one.obj.kind is _MEMORY for one in access)


class SpinWatch:
    """The count a chooser keeps past its recorded or prefixed choices (a replay's, shrinking's bounded dfs): how
    many decisions in a row kept one thread at one step while another could run."""

    __slots__ = ("again", "repeats")

    def __init__(self) -> None:
        self.again: tuple | None = None  # the current thread and its next step, kept ...
        self.repeats = 0  # ... at this many decisions in a row

    def spins(self, decision: Any) -> bool:
        """Whether, at ``decision``, the current thread has made the same read of memory ``SPIN`` times in a row
        with another thread able to run: a busy-wait to hand over from (the count then starts again)."""
        view = decision.view
        running = None if view is None else view.running
        if not decision.current_enabled or len(decision.enabled) < 2 or running is None:
            self.again = None  # no one running, or no one else to run: the count starts again
            return False
        again = (decision.current, running.access)
        if again != self.again:
            self.again, self.repeats = again, 1
            return False
        self.repeats += 1
        if self.repeats >= SPIN and spinning(running.access):
            self.again, self.repeats = None, 0
            return True
        return False
