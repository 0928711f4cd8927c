"""Importing ``racecheck.fakefs`` only defines things; the engine activates the fake filesystem (the stand-ins,
``racefs://``) when an exploration uses it. Each test runs in a fresh interpreter, where nothing is activated yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_registers_nothing_until_activation():
    _run("""
        import os
        import sys
        import types

        import fsspec
        import racecheck.fakefs as fakefs
        from racecheck.control import instrument

        def swapped():
            module = types.ModuleType("under_test")
            module.os = os
            patch = instrument.apply([module])
            try:
                return module.os is fakefs.os_facade, module.__dict__.get("open") is fakefs.fake_open
            finally:
                patch.restore()

        assert swapped() == (False, False)
        assert "racefs" not in fsspec.registry
        assert "racecheck.fakefs.integrations.fsspec_adapter" not in sys.modules
        fakefs.prepare()
        assert swapped() == (True, True)
        assert fsspec.registry["racefs"].__name__ == "RaceFileSystem"
    """)


def test_racefs_works_through_explore_without_the_entry_point():
    """A source checkout has no ``fsspec.specs`` entry point: activation registers the protocol itself."""
    _run("""
        import fsspec
        import racecheck
        from fsspec.registry import known_implementations

        known_implementations.pop("racefs", None)  # as without the installed entry point
        seen = []

        def body():
            fs = fsspec.filesystem("racefs")
            fs.pipe("racefs://a.bin", b"1")
            seen.append(fs.cat("racefs://a.bin"))

        result = racecheck.explore(body, fs="posix", schedules=1)
        assert result.ok, result.failure
        assert seen == [b"1", b"1"]  # memory watching's warm-up run, then the schedule
    """)
