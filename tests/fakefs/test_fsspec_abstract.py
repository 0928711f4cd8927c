"""fsspec's own abstract test suite (``fsspec.tests.abstract``, shipped in the wheel) against racefs.

Run three ways: on the standalone store with posix semantics, with windows semantics, and with every test body
executed inside ``racecheck.explore(fs=...)`` (see ``racecheck_explore`` in conftest.py), where each fsspec call
is a scheduling point of a controlled run. LocalFileSystem passes this suite with ``auto_mkdir=True``; so must we.
"""

from __future__ import annotations

import posixpath

import pytest
import racecheck.fakefs as fakefs
from fsspec.tests import abstract
from racecheck.fakefs import FakeFS
from racecheck.fakefs.integrations.fsspec_adapter import RaceFileSystem


class _RaceFixtures(abstract.AbstractFixtures):
    semantics = "posix"

    @pytest.fixture
    def fs(self):
        fakefs.reset_default_store(FakeFS(semantics=self.semantics))
        RaceFileSystem.clear_instance_cache()
        return RaceFileSystem(auto_mkdir=True)

    @pytest.fixture
    def fs_join(self):
        return posixpath.join

    @pytest.fixture
    def fs_path(self):
        return "/racefs/abstract"


class _Windows(_RaceFixtures):
    semantics = "windows"


class _Explored(_RaceFixtures):
    racecheck_explore = FakeFS(semantics="posix")


class _ExploredWindows(_RaceFixtures):
    semantics = "windows"
    racecheck_explore = FakeFS(semantics="windows")


SUITES = {"Copy": abstract.AbstractCopyTests, "Get": abstract.AbstractGetTests, "Put": abstract.AbstractPutTests,
          "Open": abstract.AbstractOpenTests, "Pipe": abstract.AbstractPipeTests}
for _suite_name, _suite in SUITES.items():
    for _mode, _fixtures in (("Posix", _RaceFixtures), ("Windows", _Windows), ("Explored", _Explored),
                             ("ExploredWindows", _ExploredWindows)):
        _name = f"TestRace{_mode}{_suite_name}"
        # Inside an exploration every fsspec call is a scheduling point: the whole suite that way runs under
        # the slow marker; the default suite explores the open and pipe parts.
        _slow = "Explored" in _mode and _suite_name not in ("Open", "Pipe")
        globals()[_name] = type(_name, (_suite, _fixtures), {"pytestmark": [pytest.mark.slow]} if _slow else {})


def _tree(fs, root):
    return sorted((p[len(root):], info["type"]) for p, info in fs.find(root, withdirs=True, detail=True).items())


@pytest.mark.parametrize("case", [
    ("file-into-dir", ["f", "d/"], ("f", "d")),
    ("dir-into-empty-dir", ["s/x", "e/"], ("s", "e")),
    ("dir-into-dir", ["s/x", "s/y/z", "e/k"], ("s", "e")),
    ("file-over-file", ["f", "g"], ("f", "g")),
    ("file-to-new-name", ["f"], ("f", "n")),
    ("file-to-new-parent", ["f"], ("f", "p/q/n")),
])
def test_mv_agrees_with_local_filesystem(tmp_path, case):
    """``mv`` onto an existing directory moves into it, as LocalFileSystem (shutil.move) does; with auto_mkdir
    the destination's parents are created. Same setup on both, same tree afterwards."""
    from fsspec.implementations.local import LocalFileSystem

    _name, layout, (src, dst) = case
    fakefs.reset_default_store()
    sides = [(LocalFileSystem(auto_mkdir=True), str(tmp_path)),
             (RaceFileSystem(auto_mkdir=True), "/racefs/mv")]
    trees = []
    for fs, root in sides:
        for item in layout:
            if item.endswith("/"):
                fs.makedirs(f"{root}/{item}", exist_ok=True)
            else:
                fs.pipe(f"{root}/{item}", item.encode())
        fs.mv(f"{root}/{src}", f"{root}/{dst}")
        trees.append(_tree(fs, root))
    assert trees[0] == trees[1]


def test_auto_mkdir_is_off_by_default_like_local():
    fakefs.reset_default_store()
    plain, auto = RaceFileSystem(), RaceFileSystem(auto_mkdir=True)
    with pytest.raises(FileNotFoundError):
        plain.pipe("/racefs/missing/parent/f", b"x")
    auto.pipe("/racefs/missing/parent/f", b"x")
    auto.touch("/racefs/t1/t2/t")
    auto.cp_file("/racefs/missing/parent/f", "/racefs/c1/c2/f")
    assert plain.cat("/racefs/c1/c2/f") == b"x" and plain.isfile("/racefs/t1/t2/t")
