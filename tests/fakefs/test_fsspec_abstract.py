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
from racecheck.fakefs.fsspec_adapter import RaceFileSystem


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
        globals()[_name] = type(_name, (_suite, _fixtures), {})
