"""What an exploration handed over to code racecheck does not watch, counted by callee, for its verdict: the
coverage line names callees of unknown effect and blind spots (``vars(cls)``), and a search that ran out of
schedules past a blind spot proves nothing (``control.handoff`` counts; ``search.exploration`` reads)."""

from __future__ import annotations

__racecheck_engine__ = True

# What this exploration handed over (label -> calls), for the coverage line: to callees of unknown effect, and
# (``blind``) to code racecheck could not see into without a record (``vars(cls)``), which no verdict can cover.
unknown_callees: dict[str, int] = {}
blind: dict[str, int] = {}


def blind_spots(ran_out: bool) -> str:
    """Why a search that ran out of schedules to try (``ran_out``) proves nothing: shared objects reached code racecheck
    could not see into without a record ("" if none did)."""
    if not ran_out or not blind:
        return ""
    return (f"not exhausted: shared objects reached code racecheck could not see into without a record "
            f"({counted(blind)}), so no search of what was watched is a proof")


def handed_over() -> tuple[str, ...]:
    """What the coverage line says of this exploration's hand-offs (``racecheck.search.scope``)."""
    out = []
    if unknown_callees:
        out.append(f"shared objects handed to code racecheck cannot see into, recorded as touching all of them "
                   f"({counted(unknown_callees)})")
    if blind:
        out.append(f"shared objects reached code racecheck could not see into without a record "
                   f"({counted(blind)}): no proof")
    return tuple(out)


def counted(calls: dict[str, int], shown: int = 5) -> str:
    names = sorted(calls)
    text = ", ".join(f"{name} x{calls[name]}" for name in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")
