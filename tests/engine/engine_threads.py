"""Helpers the carrier and batch tests share: the OS thread ident out of the run's reach, and the racecheck
threads still alive (none may outlive an exploration)."""

from __future__ import annotations

import _thread
import threading

REAL = {"ident": _thread.get_ident}  # the OS ident, out of reach of the run's virtual idents


def racecheck_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("racecheck-") or hasattr(t, "_racecheck_record")]
