"""What the fake filesystem registers with the engine and with fsspec when it is activated, once per process.

  * the stand-ins of ``os``, ``os.path``, ``io``, ``shutil`` and ``tempfile`` (whole modules and the functions
    imported from them) and of builtin ``open``, swapped in instrumented modules (``racecheck.control.instrument``)
    and, as the ``"fakefs"`` group, everywhere control by default reaches when ``fs=`` is given, or as the
    ``"files"`` group when files on the real disk are points (``files=True`` and no ``fs=``: ``realdisk``);
  * the ``torch.serialization`` stand-in, when torch is already loaded (later loads: ``prepare`` in the package);
  * the audit hook that keeps mounted paths off the real disk (``pycompat.install_guard``);
  * ``racefs://`` with fsspec: the pyproject entry point registers it when the package is installed, this covers
    a source checkout too.

Nothing here runs at import: ``activate`` is called by the package's ``prepare``, which the engine reaches
through the fake filesystem's extension hooks (the modules to instrument, the start of every run) and which
``begin_run`` calls for a run bound by hand.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile

from racecheck.control import instrument
from racecheck.fakefs import child_store, pycompat
from racecheck.fakefs.integrations import torch_hooks
from racecheck.fakefs.os_calls import fake_open, io_facade, os_facade, path_facade
from racecheck.fakefs.shutil_calls import shutil_facade, tempfile_facade

_active = False
_stand_ins = False


def activate() -> None:
    """Register everything listed in the module docstring; later calls do nothing."""
    global _active
    if _active:
        return
    activate_stand_ins()
    child_store.register()
    pycompat.install_guard()
    register_fsspec()
    _active = True


def activate_stand_ins() -> None:
    """The stand-ins' swaps and the torch hook alone (what the real disk's points need; no fsspec import, no
    guard for a mount nobody made); later calls only retry the torch hook, for a torch loaded since."""
    global _stand_ins
    if not _stand_ins:
        register_swaps()
        _stand_ins = True
    torch_hooks.register()
    pycompat.install_captured_io()


GROUP = "fakefs"  # the extension's name: control by default applies these swaps only when fs= is given


FILES_GROUP = "files"  # the real disk's points (``realdisk``): the same stand-ins, with files= and no fs=
GROUPS = (GROUP, FILES_GROUP)


def register_swaps() -> None:
    """Swap whole modules (``import os``) and directly imported functions (``from os import remove``), for both
    groups: the stand-ins send mounted paths to the store and every other path to the real disk's points."""
    for group in GROUPS:
        for real, fake in ((os, os_facade), (os.path, path_facade), (io, io_facade), (shutil, shutil_facade),
                           (tempfile, tempfile_facade)):
            instrument.register_swap(real, fake, group)
            for name, value in fake.__dict__.items():
                if callable(value) and not name.startswith("_") and not isinstance(value, type(os)):
                    original = getattr(real, name, None)
                    if original is not None and original is not value:
                        instrument.register_swap(original, value, group)
        instrument.register_builtin_swap("open", fake_open, group)


def register_fsspec() -> None:
    """Register ``racefs://`` with fsspec (the entry point does it for an installed package)."""
    try:
        import fsspec
        from racecheck.fakefs.integrations.fsspec_adapter import RaceFileSystem

        fsspec.register_implementation("racefs", RaceFileSystem, clobber=True)
    except ImportError:  # fsspec is a dependency; tolerate its absence in stripped-down environments
        pass


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
