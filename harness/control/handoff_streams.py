"""What a hand-off does to a stream (``io.StringIO``, ``BytesIO``, an open file): it is one piece of memory.

A stream's state is C state (its buffer and position), with no attributes a walk could name, so hand-offs once
recorded nothing for it, and two threads printing to one ``StringIO`` (``print(x, file=buf)``, ``json.dump(x,
buf)``, ``buf.write(x)``) were independent: dpor proved a program exhausted whose output order decides the test.
Now a stream handed to code racecheck does not watch is written, whatever that code is said to do to the rest of
what it is handed (``print`` and ``json.dump`` only read their data, but write their file), except by the few
methods that only look (``getvalue``, ``tell``). Even ``read`` writes: it moves the position.

``sys.stdout`` is a stream like any other when it is handed (``print(x, file=sys.stdout)``, ``sys.stdout.write``);
a bare ``print(x)`` hands nothing, so two threads printing to the terminal stay independent (docs/control.md says
so): a test that reads what was printed should print to a stream it passes.
"""

from __future__ import annotations

from typing import Any

from racecheck.runtime.access import READ, WRITE, Access, Kind

__racecheck_engine__ = True

# Methods of a stream that neither change its contents nor move its position.
LOOKS_ONLY = frozenset({"getvalue", "tell", "readable", "writable", "seekable", "isatty", "fileno"})


def touched(watch: Any, stream: Any, how: Kind, label: str) -> tuple[Access, ...]:
    """The accesses of handing ``stream`` to ``label`` (a callee that ``how`` says reads, writes or may do
    anything with what it is handed)."""
    owner, _, method = label.rpartition(".")
    if method in LOOKS_ONLY and owner.startswith("io."):  # the stream's own method (``io.StringIO.getvalue``)
        return watch.whole(stream, READ)
    return watch.whole(stream, how if how is Kind.HANDOFF else WRITE)
