"""Temporary directories on the real disk made by controlled threads: removed even when a run cannot be unwound.

A thread stuck in uncontrolled code (a real lock, a wait on another process past its bound) is left behind by
teardown, so its ``with tempfile.TemporaryDirectory()`` never exits and a ``mkdtemp`` it would have removed in a
``finally`` stays on disk, one per stuck schedule. For the duration of an exploration, ``tempfile.mkdtemp`` (which
``TemporaryDirectory`` and the fake filesystem's tempfile stand-in also go through for real directories) registers
each directory a controlled thread creates with ``runtime.add_cleanup``; the scheduler removes what is still there
only after a run that could not be unwound, and the failure message lists it. Directories of runs that unwound
are the program's business (its own cleanup ran), so nothing is removed behind its back.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from racecheck import runtime

__racecheck_engine__ = True


def _remove(path: str) -> bool:
    """Remove ``path`` if it is still there; whether it was."""
    if not os.path.isdir(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def _wrap(real: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(real)
    def mkdtemp(suffix: Any = None, prefix: Any = None, dir: Any = None) -> str:  # noqa: A002 - tempfile's name
        path = real(suffix, prefix, dir)
        if runtime.current_thread_record() is not None:
            full = os.path.abspath(os.fsdecode(path))
            runtime.add_cleanup(f"removed temporary directory {full}", functools.partial(_remove, full))
        return path

    mkdtemp._racecheck_real = real  # type: ignore[attr-defined]
    return mkdtemp


@contextmanager
def tracked() -> Iterator[None]:
    """Patch ``tempfile.mkdtemp`` for the block; restore it afterwards, pass or fail."""
    real = tempfile.mkdtemp
    if hasattr(real, "_racecheck_real"):
        yield
        return
    tempfile.mkdtemp = _wrap(real)
    try:
        yield
    finally:
        tempfile.mkdtemp = real
