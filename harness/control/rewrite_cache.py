"""Rewritten modules kept on disk across processes, so a fresh process does not rewrite a large library again.

Rewriting a module for memory watch (``racecheck.control.rewrite``) parses, walks and compiles it: for the modules a
deep library's test reaches (torch, Lightning, fsspec) that is seconds per process, and every pytest session, every
``--jobs`` worker and every CLI run starts from nothing. As pytest keeps its rewritten asserts in ``__pycache__``, the
compiled module is kept in a cache folder, one file per module, named by a digest of everything that decides what
the rewriter makes of it: the source text, the file name and module name it is compiled under, the interpreter
(``importlib.util.MAGIC_NUMBER``, its version) and racecheck's rewriter itself (a digest of the source of the
modules that rewrite, so a change to them is a new key even without a new version number). A file is written to a
temporary name and renamed into place (``os.replace``), so a reader sees a whole file or none, whatever other
processes do; one that cannot be read or loaded is a miss, never an error. Files are read and written with
``io.FileIO``, never the builtin ``open``: during an exploration that is a stand-in, and a file operation of a
controlled thread (a module reached mid-run) would be a scheduling point of the program.

Where: ``$RACECHECK_REWRITE_CACHE`` (a folder), else ``racecheck/rewrite`` under ``$XDG_CACHE_HOME`` or
``~/.cache``. ``RACECHECK_REWRITE_CACHE=off`` (or ``0``, or empty) turns it off. Modules whose tree pytest's
assertion rewriting prepared first (a test module) are not kept: what pytest makes of them depends on its version
and options, and they are small.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import os
import sys
import threading
import types
from typing import Any

__racecheck_engine__ = True

ENV = "RACECHECK_REWRITE_CACHE"
OFF = ("", "0", "off", "false", "no")
# The code that decides what a rewritten module is: the whole control package (the rewriter, and the hooks and
# hand-off tables whose names and rules it compiles in), so that no edit of it can leave a stale entry behind.
_rewriter_digest: list[str] = []


def folder() -> str | None:
    """The cache folder, or None when the cache is off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in OFF else chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "racecheck", "rewrite")


def rewriter_digest() -> str:
    """A digest of the control package's source, file by file in name order (read once per process)."""
    if not _rewriter_digest:
        here = os.path.dirname(os.path.abspath(__file__))
        digest = hashlib.sha256()
        for name in sorted(n for n in os.listdir(here) if n.endswith(".py")):
            try:
                with open(os.path.join(here, name), "rb") as source:
                    digest.update(name.encode() + b"\0" + source.read())
            except OSError:
                digest.update(name.encode() + b"\0missing")
        _rewriter_digest.append(digest.hexdigest())
    return _rewriter_digest[0]


def key(source: str, filename: str, module: str) -> str:
    """The cache file's name for ``source`` compiled as ``filename`` of module ``module``."""
    digest = hashlib.sha256()
    for part in (source, filename, module, sys.version, importlib.util.MAGIC_NUMBER.hex(), rewriter_digest()):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def load(source: str, filename: str, module: str) -> tuple[types.CodeType, frozenset[str]] | None:
    """The module's compiled rewritten code and the globals its functions rebind, if the cache has them."""
    where = folder()
    if where is None:
        return None
    try:
        with io.FileIO(os.path.join(where, key(source, filename, module)), "r") as kept:
            code, rebound = marshal.loads(kept.readall())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(code, types.CodeType) or not isinstance(rebound, (list, tuple)):
        return None
    return code, frozenset(rebound)


def store(source: str, filename: str, module: str, code: types.CodeType, rebound: frozenset[str]) -> None:
    """Keep the module's compiled rewritten code; a folder that cannot be written leaves the cache off for it."""
    where = folder()
    if where is None:
        return
    data: Any = (code, sorted(rebound))
    final = os.path.join(where, key(source, filename, module))
    # not tempfile's (an exploration registers what controlled threads make through it for cleanup: control.tempdirs),
    # nor the builtin open (a stand-in during an exploration: a controlled thread's file operation is a point there)
    temporary = f"{final}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(where, exist_ok=True)
        try:
            with io.FileIO(temporary, "w") as out:
                view = memoryview(marshal.dumps(data))
                while view:
                    view = view[out.write(view):]
            os.replace(temporary, final)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
    except (OSError, ValueError):
        return
