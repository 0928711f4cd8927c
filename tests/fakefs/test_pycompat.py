"""Every supported Python (3.10-3.13), and never the real disk.

The version-specific branches are chosen by ``racecheck.fakefs.pycompat.python_version()``; the tests that
depend on the interpreter run on each of them (tox envs py310..py313), the others patch that one function.
"""

from __future__ import annotations

import _io
import builtins
import glob
import os
import pathlib
import shutil
import tempfile

import pytest
import racecheck
import racecheck.fakefs as fakefs
from fakerun_helpers import bound_run
from racecheck.fakefs import pycompat

R = "/racefs"


def _real_disk_untouched() -> bool:
    return not os.path.exists(f"{R}/deep")


def test_pathlib_io_stays_in_the_store_on_this_python():
    """The audit's repro: Path(root()/"deep"/"p.txt").write_text(...) inside explore(fs="posix") must reach the
    store (3.10: _NormalAccessor; 3.11/3.12: module globals; 3.13: pathlib._local), never /racefs on disk."""
    seen = {}

    def program():
        p = pathlib.Path(fakefs.root()) / "deep" / "p.txt"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("hello")
        seen["read"] = p.read_text()
        seen["exists"] = p.exists() and p.is_file()
        seen["listing"] = sorted(x.name for x in p.parent.iterdir())
        p.rename(p.with_name("q.txt"))
        (p.parent / "t").touch()
        seen["glob"] = sorted(x.name for x in p.parent.glob("*.txt"))
        seen["glob.glob"] = sorted(glob.glob(fakefs.root() + "/deep/*"))
        seen["files"] = [f[0] for f in fakefs.current_store().files()]

    result = racecheck.explore(program, fs="posix", schedules=1)
    assert result.ok, result.failure
    assert seen == {"read": "hello", "exists": True, "listing": ["p.txt"], "glob": ["q.txt"],
                    "glob.glob": [f"{R}/deep/q.txt", f"{R}/deep/t"], "files": [f"{R}/deep/q.txt", f"{R}/deep/t"]}
    assert _real_disk_untouched()


def test_unserved_mounted_path_raises_instead_of_reaching_the_disk():
    """Code that is not under control (here ``_io.open`` called directly, as a C extension would open a path by
    name) must not write under the mount root: the guard refuses it with a clear message."""
    def program():
        _io.open(f"{R}/deep/leak.txt", "w")

    result = racecheck.explore(program, fs="posix", schedules=1)
    assert not result.ok
    exc = result.failure.exception
    assert isinstance(exc, fakefs.UnservedPathError)
    assert "not under racecheck's fake filesystem" in str(exc) and "test_pycompat" in str(exc)
    assert _real_disk_untouched()


def test_guard_is_silent_outside_runs_and_for_other_paths(tmp_path):
    (tmp_path / "x").write_text("real")  # no run: the hook returns at once
    with bound_run("posix"):
        assert builtins.open(tmp_path / "x").read() == "real"  # a real path inside a run is fine


@pytest.mark.parametrize("version,raises", [((3, 10), True), ((3, 11), True), ((3, 12), False), ((3, 13), False)])
def test_named_temporary_file_close_after_delete_follows_the_version(monkeypatch, version, raises):
    monkeypatch.setattr(pycompat, "python_version", lambda: version)
    with bound_run("posix"):
        f = fakefs.tempfile_facade.NamedTemporaryFile(dir=R)
        fakefs.os_facade.remove(f.name)
        if raises:
            with pytest.raises(FileNotFoundError):
                f.close()
        else:
            f.close()


def test_named_temporary_file_matches_the_running_python(tmp_path):
    """The same sequence on the real tempfile and on the fake gives the same outcome on this interpreter."""
    def outcome(ntf, remove, directory):
        f = ntf(dir=directory)
        remove(f.name)
        try:
            f.close()
        except OSError as exc:
            return type(exc).__name__
        return "quiet"

    real = outcome(tempfile.NamedTemporaryFile, os.remove, str(tmp_path))
    with bound_run("posix"):
        fake = outcome(fakefs.tempfile_facade.NamedTemporaryFile, fakefs.os_facade.remove, R)
    assert real == fake


def test_delete_on_close_false_deletes_at_exit(monkeypatch):
    monkeypatch.setattr(pycompat, "python_version", lambda: (3, 12))
    with bound_run("posix"):
        with fakefs.tempfile_facade.NamedTemporaryFile(dir=R, delete_on_close=False) as f:
            f.write(b"x")
            f.close()
            assert fakefs.os_facade.path.exists(f.name)  # closed, still there: reopen it by name
            with fakefs.fake_open(f.name, "rb") as g:
                assert g.read() == b"x"
        assert not fakefs.os_facade.path.exists(f.name)


def test_pathlib_modules_by_version(monkeypatch):
    monkeypatch.setattr(pycompat, "python_version", lambda: (3, 13))
    assert pycompat.pathlib_modules() == ("pathlib", "pathlib._local", "glob")
    monkeypatch.setattr(pycompat, "python_version", lambda: (3, 10))
    assert pycompat.pathlib_modules() == ("pathlib", "glob")


def test_rmtree_stand_in_passes_only_given_keywords_to_the_real_one(tmp_path):
    """3.10's shutil.rmtree has no dir_fd: a real path must get the real function's own error, not TypeError."""
    with bound_run("posix"):
        with pytest.raises(FileNotFoundError):
            fakefs.shutil_facade.rmtree(str(tmp_path / "missing"))
        (tmp_path / "d").mkdir()
        fakefs.shutil_facade.rmtree(str(tmp_path / "d"))
        fakefs.shutil_facade.rmtree(str(tmp_path / "missing"), ignore_errors=True)
    assert not (tmp_path / "d").exists()


def test_cloned_shutil_never_touches_the_real_module():
    """The fake runs CPython's own shutil code with private globals: the real module is left as it was."""
    before = (shutil.copyfile, shutil.move, shutil.__dict__.get("_USE_CP_SENDFILE"), os.makedirs)
    with bound_run("posix"):
        fakefs.os_facade.makedirs(f"{R}/a/b")
        with fakefs.fake_open(f"{R}/a/b/f", "wb") as f:
            f.write(b"x")
        fakefs.shutil_facade.copytree(f"{R}/a", f"{R}/c")
        fakefs.shutil_facade.move(f"{R}/c", f"{R}/a")
        assert sorted(fakefs.os_facade.listdir(f"{R}/a")) == ["b", "c"]
    assert (shutil.copyfile, shutil.move, shutil.__dict__.get("_USE_CP_SENDFILE"), os.makedirs) == before
