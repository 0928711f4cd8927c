"""Undoing what a run that could not be unwound left behind, and saying so in words a replay repeats exactly.

A controlled thread stuck in uncontrolled code never reaches its own ``finally``/``with`` exits, so whatever it
registered with ``runtime.add_cleanup(description, action)`` is undone here, after teardown. The failure message
must read the same in the exploration and in every replay of its token, so it never names what differs between two
runs of the same schedule (a random temporary path, a child's pid): a registration whose description is a
``Leftover`` (a ``str`` holding only its kind, "temporary directory", with the path and the verb as attributes) is
counted by kind ("removed 2 temporary directories, 1 temporary file; stopped 1 child process"), and the paths go to
the structured records (``failure.cleanup``, the JSON report). A plain string description is the caller's own
words and is listed as given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__racecheck_engine__ = True


class Leftover(str):
    """A cleanup description that is only a kind ("temporary file"); ``path`` says which one ("/tmp/x", "pid 42"),
    out of the text; ``verb`` says what undoing it did ("removed", "stopped")."""

    path: str
    verb: str

    def __new__(cls, kind: str, path: str, verb: str = "removed") -> Leftover:
        self = super().__new__(cls, kind)
        self.path = path
        self.verb = verb
        return self


@dataclass(frozen=True)
class Cleaned:
    """One thing undone (or attempted) after a run that could not be unwound."""

    kind: str  # "temporary directory", "child process", or a caller's own description
    path: str  # what it was ("/tmp/x", "pid 42"; "" when the description was plain text)
    outcome: str  # the verb ("removed", "stopped"), or "failed: ExceptionType: message"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "path": self.path, "outcome": self.outcome}


def undo(pending: Sequence[tuple[str, Callable[[], bool]]]) -> list[Cleaned]:
    """Run every registered action, last registered first (as ``finally`` blocks and ``with`` exits unwind: a file
    made inside a temporary directory goes before the directory); keep what there was to undo (an action returns
    whether it found anything). One failing action never stops the others."""
    done: list[Cleaned] = []
    for description, action in reversed(pending):
        path = getattr(description, "path", "")
        try:
            if action():
                done.append(Cleaned(str(description), path, getattr(description, "verb", "removed")))
        except Exception as exc:  # noqa: BLE001 - reported, and the next one still runs
            done.append(Cleaned(str(description), path, f"failed: {type(exc).__name__}: {exc}"))
    return done


def _plural(kind: str, n: int) -> str:
    if n == 1:
        return kind
    return kind[:-1] + "ies" if kind.endswith("y") and not kind.endswith(("ay", "ey", "oy", "uy")) else kind + "s"


def describe(done: Sequence[Cleaned]) -> str:
    """Deterministic words for ``done``: counts per kind for leftovers with a path, plain descriptions as given."""
    if not done:
        return "nothing it created was left to clean up"
    counted: dict[tuple[str, str], int] = {}  # (verb, or "" for a failure; kind) -> how many
    plain: list[str] = []
    for item in done:
        failed = item.outcome.startswith("failed:")
        if item.path:
            key = ("" if failed else item.outcome, item.kind)
            counted[key] = counted.get(key, 0) + 1
        else:
            plain.append(item.kind if not failed else f"{item.kind} ({item.outcome})")
    parts = []
    for verb in sorted({verb for verb, _ in counted if verb}):
        parts.append(verb + " " + ", ".join(
            f"{n} {_plural(kind, n)}" for (v, kind), n in sorted(counted.items()) if v == verb
        ))
    failed_kinds = [f"{n} {_plural(kind, n)}" for (v, kind), n in sorted(counted.items()) if not v]
    if failed_kinds:
        parts.append("could not clean up " + ", ".join(failed_kinds) + " (see failure.cleanup)")
    return "; ".join(parts + plain)
