"""Every temporary file the suite's programs leave behind goes into one folder per pytest process, removed when
the process ends.

The suite explores programs that fail on purpose: a failing schedule's ``finally`` never runs its cleanup (the
program's business, left alone by the engine), torch's ``multiprocessing.spawn`` leaves a
``pytorch-errorfile-*.pickle`` per failing rank, and program modules make their folder at import. Run after run
that was hundreds of entries in the machine's temp folder. ``tempfile.tempdir`` and ``TMPDIR`` (which spawned
children read) point at a folder of this process's own, set before any test module is imported.
"""

from __future__ import annotations

import multiprocessing.util
import os
import shutil
import tempfile

import pytest

_made: list[tuple[str, str | None, str | None]] = []


def pytest_configure(config: pytest.Config) -> None:
    folder = tempfile.mkdtemp(prefix="racecheck-tests-")
    _made.append((folder, tempfile.tempdir, os.environ.get("TMPDIR")))
    tempfile.tempdir = folder
    os.environ["TMPDIR"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    while _made:
        folder, tempdir, environ = _made.pop()
        tempfile.tempdir = tempdir
        if environ is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = environ
        # at exit, after multiprocessing's own finalizers (its pymp-* folder in ours goes at priority -100)
        multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True},
                                      exitpriority=-101)
