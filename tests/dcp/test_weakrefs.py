"""Hand-offs key a callable object by its type: its own ``__eq__`` may be watched code that calls it (torch's
``WeakIdRef``), which recurred without end when two of them met in the table of callees (a RecursionError in DCP's
save callback)."""

import dcp_weakrefs as weakrefs
import racecheck


def test_callable_objects_whose_eq_calls_them():
    result = racecheck.explore(weakrefs.refs_called_twice, strategy="random", seed=1, schedules=5)
    assert result.ok, result.failure
