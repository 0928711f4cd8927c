"""Writing report files so a reader never sees half of one: temp file in the same directory, fsync, rename.

A report directory is written in two phases: every file's content is rendered in memory first (so a rendering
error leaves the directory untouched), then each file replaces its previous version atomically.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

__racecheck_engine__ = True


def write_atomic(path: str, data: str | bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_files(directory: str, files: Mapping[str, str | bytes]) -> list[str]:
    """Write already-rendered files into ``directory``, each atomically; returns their paths."""
    paths = []
    for name, data in files.items():
        path = os.path.join(directory, name)
        write_atomic(path, data)
        paths.append(path)
    return paths
