"""Faults drawn from the run's choice stream, so a schedule token replays them exactly.

Every fault is one ``run.choose(n, label)`` where 0 means "no fault": the shrinker lowers choices toward 0 and
so removes faults it does not need. Points are drawn lazily, at the first operation that could carry them, so a
run that never touches the filesystem records no fault choices at all.
"""

from __future__ import annotations

import errno

from racecheck.fakefs.semantics import posix_error
from racecheck.fakefs.spec import FakeFS
from racecheck.runtime import RunContract


class FaultPlan:
    """Per-run fault state: counters of eligible operations and the drawn fault positions."""

    def __init__(self, spec: FakeFS) -> None:
        self.spec = spec
        self.crash_kinds = spec.crash_kinds if spec.crash else frozenset()
        self.eio_kinds = spec.eio_kinds
        self.crash_at: int | None = None
        self.eio_at: int | None = None
        self.enospc_at: int | None = None
        self.crash_count = 0
        self.eio_count = 0
        self.write_count = 0
        self.quota: int | None = spec.enospc_quota
        self.injected: list[str] = []

    @property
    def active(self) -> bool:
        s = self.spec
        return bool(self.crash_kinds or self.eio_kinds or s.enospc or s.latency)

    def before(self, run: RunContract, kind: str, text: str, used_bytes: int) -> None:
        """After the operation's scheduling point, before its effect: latency, EIO, drawn disk-full."""
        s = self.spec
        if s.latency:
            pick = run.choose(len(s.latency) + 1, "fs.latency")
            if pick:
                self.injected.append(f"latency {s.latency[pick - 1]}s before {text}")
                run.sleep(s.latency[pick - 1])
        if kind in self.crash_kinds and self.crash_at is None:
            self.crash_at = run.choose(s.fault_window + 1, "fs.crash")
        if kind in self.eio_kinds:
            if self.eio_at is None:
                self.eio_at = run.choose(s.fault_window + 1, "fs.eio")
            self.eio_count += 1
            if self.eio_count == self.eio_at:
                self.injected.append(f"EIO at {text}")
                raise posix_error(errno.EIO, _first_path(text))
        if kind == "write" and s.enospc:
            if self.enospc_at is None:
                self.enospc_at = run.choose(s.fault_window + 1, "fs.enospc")
            self.write_count += 1
            if self.write_count == self.enospc_at:
                self.injected.append(f"disk full at {text} ({used_bytes} bytes)")
                self.quota = used_bytes if self.quota is None else min(self.quota, used_bytes)

    def crash_due(self, kind: str) -> bool:
        """Count an eligible operation whose effect just happened; True if the power fails right now."""
        if kind not in self.crash_kinds:
            return False
        self.crash_count += 1
        return self.crash_at is not None and self.crash_count == self.crash_at


def _first_path(text: str) -> str | None:
    parts = text.split(" ")
    return parts[1] if len(parts) > 1 else None

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
