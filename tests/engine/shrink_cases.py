"""Generated programs for the shrink's property tests: thread lengths and a bug as a few orderings between steps of
different threads (the failing schedules are those that keep every ordering)."""

import itertools

from hypothesis import strategies as st

programs = st.lists(st.integers(1, 3), min_size=2, max_size=3).map(tuple)


@st.composite
def program_and_bug(draw):
    lengths = draw(programs)
    events = [(t, s) for t, n in enumerate(lengths) for s in range(n)]
    pairs = [(a, b) for a, b in itertools.permutations(events, 2) if a[0] != b[0]]
    constraints = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=3, unique=True))
    return lengths, constraints
