"""Files on the real disk are scheduling points (``files=True``, the default, when no ``fs=`` is given): two threads
that read-modify-write one JSON file lose a record in some orders, and every strategy finds it with no options;
its locked twin is proven by dpor. Every way code reaches a file (open, os, descriptors, pathlib, shutil, fsspec's
local filesystem) makes points; ``files=False`` turns them off; ``check_determinism`` reports a run that reads what
an earlier schedule left on the disk."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import threading

import pytest
import racecheck

STRATEGIES = ("random", "pct", "pos", "dfs", "dpor")


class _Unlocked:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def json_records(locked: bool):
    """Two threads add a record to one JSON file: read it, append, write a temporary file, replace."""

    def test():
        directory = tempfile.mkdtemp()
        path = os.path.join(directory, "db.json")
        with open(path, "w") as f:
            json.dump({"records": []}, f)
        guard = threading.Lock() if locked else _Unlocked()

        def add(record):
            with guard:
                with open(path) as f:
                    data = json.load(f)
                data["records"].append(record)
                temporary = f"{path}.{record}.tmp"
                with open(temporary, "w") as f:
                    json.dump(data, f)
                os.replace(temporary, path)

        threads = [threading.Thread(target=add, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with open(path) as f:
            records = json.load(f)["records"]
        shutil.rmtree(directory)
        assert sorted(records) == [0, 1], f"lost a record: {records}"

    return test


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_lost_record_is_found_by_every_strategy(strategy):
    result = racecheck.explore(json_records(locked=False), strategy=strategy)
    assert not result.ok
    assert "lost a record" in str(result.failure.exception)
    trace = str(result.failure.trace)
    assert "fs.replace $TMP1/db.json.0.tmp -> $TMP1/db.json" in trace or "fs.replace $TMP1/db.json.1.tmp" in trace
    again = racecheck.replay(json_records(locked=False), result.failure.token)
    assert not again.ok and again.failure.trace == result.failure.trace  # temp names alike in every run


def test_the_locked_twin_is_proven_by_dpor():
    result = racecheck.explore(json_records(locked=True), strategy="dpor")
    assert result.ok and result.exhausted


def test_files_false_leaves_the_disk_unwatched():
    """The option that turns the points off: dpor then sees one class and calls the racy program clean."""
    result = racecheck.explore(json_records(locked=False), strategy="dpor", files=False)
    assert result.ok and result.exhausted


def test_with_a_fake_filesystem_the_real_disk_makes_no_points(tmp_path):
    """fs= replaces the real disk's points: a real path outside the mount is the real OS's, untouched."""
    path = tmp_path / "x.txt"

    def test():
        path.write_text("x")

    result = racecheck.explore(test, strategy="random", schedules=1, fs="posix", locations="always")
    assert result.ok


def _two(work):
    def test():
        threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return test


def test_descriptor_calls_are_points(tmp_path):
    """os.open/os.read/os.write/os.close on one counter file: a lost increment, found by dpor."""
    path = str(tmp_path / "counter")

    def setup_and_check(test):
        def run():
            with open(path, "wb") as f:
                f.write(b"0")
            test()
            with open(path, "rb") as f:
                assert f.read() == b"2", f"counter is {f.read()!r}"

        return run

    def bump(_n):
        fd = os.open(path, os.O_RDONLY)
        value = int(os.read(fd, 10))
        os.close(fd)
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, str(value + 1).encode())
        os.fsync(fd)
        os.close(fd)

    result = racecheck.explore(setup_and_check(_two(bump)), strategy="dpor")
    assert not result.ok
    assert "fs.write" in str(result.failure.trace) and "fs.open" in str(result.failure.trace)


def test_pathlib_and_shutil_are_points(tmp_path):
    """Path.read_text/write_text and shutil.copyfile: a publish that copies a half-updated pair of files."""
    src, dst = tmp_path / "a.txt", tmp_path / "b.txt"

    def test():
        src.write_text("old")
        done = []

        def writer():
            src.write_text("new")

        def publisher():
            shutil.copyfile(src, dst)
            done.append(dst.read_text())

        threads = [threading.Thread(target=writer), threading.Thread(target=publisher)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert done == ["new"], "published the old text"

    result = racecheck.explore(test, strategy="dpor")
    assert not result.ok
    trace = str(result.failure.trace)
    assert "fs.copyfile" in trace and "fs.open" in trace


def test_fsspec_local_filesystem_is_points(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    path = str(tmp_path / "n.txt")

    def setup(test):
        def run():
            with open(path, "w") as f:
                f.write("0")
            test()
            with open(path) as f:
                assert f.read() == "2"

        return run

    def bump(_n):
        fs = fsspec.filesystem("file")
        with fs.open(path, "r") as f:
            value = int(f.read())
        with fs.open(path, "w") as f:
            f.write(str(value + 1))

    result = racecheck.explore(setup(_two(bump)), strategy="dpor")
    assert not result.ok


def test_check_determinism_reports_a_file_an_earlier_schedule_left(tmp_path):
    log = tmp_path / "log.txt"

    def appends():
        with open(log, "a") as f:
            f.write("x")

    result = racecheck.explore(appends, strategy="random", schedules=3, check_determinism=True)
    assert not result.ok and result.failure.kind == "nondeterminism"
    message = str(result.failure.exception)
    assert str(log) in message and "earlier" in message and "temporary directory" in message


def test_check_determinism_accepts_a_temporary_directory_per_schedule():
    result = racecheck.explore(json_records(locked=True), strategy="random", schedules=5, check_determinism=True)
    assert result.ok


def test_a_file_object_is_the_real_class_and_works_outside_runs(tmp_path):
    """What open() returns inside a run is what CPython's open returns (buffered, text) over the real file."""
    seen = []
    path = tmp_path / "t.txt"

    def test():
        with open(path, "w") as f:
            seen.append(type(f))
            f.write("hello\n")
        with open(path, "rb") as f:
            seen.append(type(f))
            seen.append(f.read())

    assert racecheck.explore(test, strategy="random", schedules=1).ok
    import io

    assert issubclass(seen[0], io.TextIOWrapper) and issubclass(seen[1], io.BufferedReader)
    assert seen[2] == b"hello\n"
    assert pathlib.Path(path).read_text() == "hello\n"
