"""Rewritten modules kept on disk across processes (issue 47, item 2): keyed by what decides the rewrite, written
whole or not at all, a miss whenever a file is unusable, off on request; a fresh process that finds them explores
exactly as one that rewrote the modules itself."""

import json
import os
import subprocess
import sys
import textwrap

from racecheck.control import rewrite_cache
from racecheck.control.rewrite import rewrite_module

SOURCE = "def bump(box):\n    box.n = box.n + 1\n"


def _compiled(source=SOURCE, filename="/x/m.py", module="m"):
    rewritten = rewrite_module(source, filename, module)
    return compile(rewritten.tree, filename, "exec", dont_inherit=True), rewritten.rebound


def test_a_kept_module_loads_as_it_was_stored_under_its_own_key_only(tmp_path, monkeypatch):
    monkeypatch.setenv(rewrite_cache.ENV, str(tmp_path))
    code, rebound = _compiled()
    assert rewrite_cache.load(SOURCE, "/x/m.py", "m") is None
    rewrite_cache.store(SOURCE, "/x/m.py", "m", code, rebound)
    loaded = rewrite_cache.load(SOURCE, "/x/m.py", "m")
    assert loaded is not None and loaded[0] == code and loaded[1] == rebound
    assert rewrite_cache.load(SOURCE + "\n", "/x/m.py", "m") is None  # another source
    assert rewrite_cache.load(SOURCE, "/y/m.py", "m") is None  # compiled under another file name
    assert rewrite_cache.load(SOURCE, "/x/m.py", "n") is None  # another module
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


def test_an_unusable_file_is_a_miss_and_off_means_nothing_is_read_or_written(tmp_path, monkeypatch):
    monkeypatch.setenv(rewrite_cache.ENV, str(tmp_path))
    code, rebound = _compiled()
    rewrite_cache.store(SOURCE, "/x/m.py", "m", code, rebound)
    (kept,) = os.listdir(tmp_path)
    (tmp_path / kept).write_bytes(b"not marshal data")
    assert rewrite_cache.load(SOURCE, "/x/m.py", "m") is None
    off = tmp_path / "off"
    for word in ("off", "0", ""):
        monkeypatch.setenv(rewrite_cache.ENV, word)
        assert rewrite_cache.folder() is None
        rewrite_cache.store(SOURCE, "/x/m.py", "m", code, rebound)
        assert rewrite_cache.load(SOURCE, "/x/m.py", "m") is None
    assert not off.exists()


PROGRAM = textwrap.dedent("""
    import json, sys, threading
    import racecheck
    sys.path.insert(0, sys.argv[1])
    import cached_subject

    result = racecheck.explore(cached_subject.lost_update, strategy="pct", schedules=50, seed=0)
    print(json.dumps([result.failure.token, result.failure.trace, str(result.failure.race)]))
""")

SUBJECT = textwrap.dedent("""
    import threading

    class Box:
        def __init__(self):
            self.n = 0

    def bump(box):
        seen = box.n
        box.n = seen + 1

    def lost_update():
        box = Box()
        threads = [threading.Thread(target=bump, args=(box,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert box.n == 2, box.n
""")


def test_a_fresh_process_that_finds_the_module_kept_explores_as_one_that_rewrote_it(tmp_path):
    (tmp_path / "cached_subject.py").write_text(SUBJECT)
    cache = tmp_path / "cache"
    env = {**os.environ, rewrite_cache.ENV: str(cache)}

    def explore():
        done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], env=env, capture_output=True,
                              text=True, timeout=120, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = explore()
    kept = {name: os.stat(cache / name).st_mtime_ns for name in os.listdir(cache)}
    assert kept, "the first process kept nothing"
    second = explore()
    assert second == first
    assert {name: os.stat(cache / name).st_mtime_ns for name in os.listdir(cache)} == kept  # read, not rewritten
