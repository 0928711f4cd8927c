"""The pytest plugin on real-disk files: a marked test that races on a JSON file in ``tmp_path`` (a fresh, empty
directory every schedule) is found with no ``fs=``; its locked twin passes, with ``check_determinism`` too (the
plugin's emptying of ``tmp_path`` is its own housekeeping, not the test's: no point, no stale file)."""

from __future__ import annotations

import textwrap

pytest_plugins = ("pytester",)

TESTS = textwrap.dedent(
    """
    import json
    import os
    import threading
    import pytest

    def _records(tmp_path, lock):
        path = tmp_path / "db.json"
        path.write_text(json.dumps([]))

        def add(record):
            with lock:
                data = json.loads(path.read_text())
                data.append(record)
                (tmp_path / f"{record}.tmp").write_text(json.dumps(data))
                os.replace(tmp_path / f"{record}.tmp", path)

        threads = [threading.Thread(target=add, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(json.loads(path.read_text())) == [0, 1]

    class _Unlocked:
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return False

    @pytest.mark.racecheck(strategy="dpor")
    def test_lost_record(tmp_path):
        _records(tmp_path, _Unlocked())

    @pytest.mark.racecheck(strategy="dpor", check_determinism=True)
    def test_locked(tmp_path):
        _records(tmp_path, threading.Lock())
    """
)


def test_a_real_disk_race_in_tmp_path_is_found_and_its_fix_passes(pytester):
    pytester.makepyfile(test_files=TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "test_lost_record" in out and "fs.replace" in out
