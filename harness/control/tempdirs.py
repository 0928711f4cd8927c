"""Temporary directories and files on the real disk made by controlled threads: removed even when a run cannot
be unwound.

A thread stuck in uncontrolled code (a real lock, a wait on another process past its bound) is left behind by
teardown, so its ``with tempfile.TemporaryDirectory()`` / ``NamedTemporaryFile()`` never exits and a ``mkdtemp`` or
``mkstemp`` it would have removed in a ``finally`` stays on disk, one per stuck schedule. For the duration of an
exploration, ``tempfile.mkdtemp`` (which ``TemporaryDirectory`` and the fake filesystem's tempfile stand-in also go
through for real directories) and ``tempfile._mkstemp_inner`` (behind ``mkstemp``, ``NamedTemporaryFile`` and the
named fallback of ``TemporaryFile``) register what a controlled thread creates with ``runtime.add_cleanup``. The
scheduler removes what is still there only after a run that could not be unwound; the failure message counts it
by kind ("removed 1 temporary directory, 1 temporary file": the same words in every replay) and
``failure.cleanup`` lists the paths. Whatever a run that unwound created is the program's business (its own
cleanup ran), so nothing is removed behind its back.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from racecheck import runtime
from racecheck.runtime.cleanup import Leftover

__racecheck_engine__ = True

DIRECTORY = "temporary directory"
FILE = "temporary file"


def _remove_directory(path: str) -> bool:
    """Remove ``path`` if it is still there; whether it was."""
    if not os.path.isdir(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def _remove_file(path: str) -> bool:
    """Remove ``path`` if it is still there (a file, not what replaced it); whether it was."""
    if not os.path.lexists(path) or os.path.isdir(path):
        return False
    os.unlink(path)
    return True


_created: list[Callable[[str, str], None]] = []


def on_created(callback: Callable[[str, str], None]) -> None:
    """``callback(kind, path)`` is told of every temporary directory or file a controlled thread makes (the real
    disk's points name paths under it after it: ``racecheck.fakefs.realdisk``)."""
    if callback not in _created:
        _created.append(callback)


def _track(kind: str, path: Any, remove: Callable[[str], bool]) -> None:
    if runtime.current_thread_record() is not None:
        full = os.path.abspath(os.fsdecode(path))
        runtime.add_cleanup(Leftover(kind, full), functools.partial(remove, full))
        for callback in _created:
            callback(kind, full)


def _wrap_mkdtemp(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def mkdtemp(suffix: Any = None, prefix: Any = None, dir: Any = None) -> Any:  # noqa: A002 - tempfile's name
        path = real(suffix, prefix, dir)
        _track(DIRECTORY, path, _remove_directory)
        return path

    mkdtemp._racecheck_real = real  # type: ignore[attr-defined]
    return mkdtemp


def _wrap_file_maker(real: Callable[..., Any]) -> Callable[..., Any]:
    """``mkstemp`` or the private ``_mkstemp_inner`` it (and ``NamedTemporaryFile``) goes through: same result."""

    @functools.wraps(real)
    def make(*args: Any, **kwargs: Any) -> Any:
        fd, path = real(*args, **kwargs)
        _track(FILE, path, _remove_file)
        return fd, path

    make._racecheck_real = real  # type: ignore[attr-defined]
    return make


# (attribute of tempfile, wrapper); ``_mkstemp_inner`` is private, so a Python without it keeps plain ``mkstemp``
def _targets() -> list[tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]]:
    files = "_mkstemp_inner" if callable(getattr(tempfile, "_mkstemp_inner", None)) else "mkstemp"
    return [("mkdtemp", _wrap_mkdtemp), (files, _wrap_file_maker)]


@contextmanager
def _patched(name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    real = getattr(tempfile, name)
    if hasattr(real, "_racecheck_real"):  # already tracked (nested use): leave it
        yield
        return
    setattr(tempfile, name, wrap(real))
    try:
        yield
    finally:
        setattr(tempfile, name, real)


@contextmanager
def tracked() -> Iterator[None]:
    """Patch tempfile's directory and file makers for the block; restore them afterwards, pass or fail."""
    with ExitStack() as stack:
        for name, wrap in _targets():
            stack.enter_context(_patched(name, wrap))
        yield
