"""Simulated programs for the shrink's property tests, no threads: threads of a few steps run one step at a time
(``run_threads``), and generated programs with a bug as a few orderings between steps of different threads (the
failing schedules are those that keep every ordering)."""

import itertools

from hypothesis import strategies as st
from racecheck.runtime.chooser import Decision

programs = st.lists(st.integers(1, 3), min_size=2, max_size=3).map(tuple)


@st.composite
def program_and_bug(draw):
    lengths = draw(programs)
    events = [(t, s) for t, n in enumerate(lengths) for s in range(n)]
    pairs = [(a, b) for a, b in itertools.permutations(events, 2) if a[0] != b[0]]
    constraints = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique=True))
    return lengths, constraints


def run_threads(lengths: tuple[int, ...], chooser) -> tuple[list[tuple[int, int]], list[int], int]:
    """Threads of ``lengths`` steps run one step at a time from thread 0, ``chooser`` asked wherever more than one
    can run (the current thread first, then the others by id): (events as (thread, step), choices, preemptions)."""
    done = [0] * len(lengths)
    current, events, choices, preemptions = 0, [], [], 0
    while True:
        alive = done[current] < lengths[current]
        enabled = ([current] if alive else []) + [t for t in range(len(lengths)) if t != current and
                                                  done[t] < lengths[t]]
        if not enabled:
            return events, choices, preemptions
        index = 0
        if len(enabled) > 1:
            index = chooser.pick_thread(Decision(enabled, alive, False, current if alive else None, 0, None))
            choices.append(index)
        preemptions += 1 if alive and index else 0
        current = enabled[index]
        events.append((current, done[current]))
        done[current] += 1
