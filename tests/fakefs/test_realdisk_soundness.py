"""The real disk's accesses are sound for partial-order reduction: on small programs of two or three threads doing
file operations on one real directory, dpor (one schedule per class of equivalent interleavings, by the accesses
the points record) reaches every outcome an unbounded dfs (every interleaving) reaches."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading

import pytest
import racecheck


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        return type(exc).__name__


def _tree(root):
    found = []
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        found.append((rel, tuple(sorted(dirs)),
                      tuple(sorted((name, _read(os.path.join(directory, name))) for name in files))))
    return tuple(sorted(found))


def _quiet(fn, *args):
    try:
        return fn(*args)
    except OSError as exc:
        return type(exc).__name__


def rmtree_vs_write(d):
    return [lambda: _quiet(_write, os.path.join(d, "sub", "x"), "x"),
            lambda: shutil.rmtree(os.path.join(d, "sub"), ignore_errors=True)]


def replace_vs_read(d):
    return [lambda: (_write(os.path.join(d, "t"), "new"), os.replace(os.path.join(d, "t"), os.path.join(d, "x"))),
            lambda: _read(os.path.join(d, "x"))]


def listing_vs_create(d):
    return [lambda: _quiet(os.makedirs, os.path.join(d, "sub", "n")),
            lambda: sorted(os.listdir(d)),
            lambda: _quiet(os.remove, os.path.join(d, "x"))]


def copy_vs_write(d):
    return [lambda: _quiet(shutil.copyfile, os.path.join(d, "x"), os.path.join(d, "y")),
            lambda: _write(os.path.join(d, "x"), "changed")]


def walk_vs_rename(d):
    return [lambda: sorted((os.path.relpath(p, d), sorted(fs)) for p, _, fs in os.walk(d)),
            lambda: _quiet(os.rename, os.path.join(d, "sub"), os.path.join(d, "moved"))]


def descriptors(d):
    def append(text):
        fd = os.open(os.path.join(d, "x"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, text.encode())
        os.close(fd)

    return [lambda: append("a"), lambda: _read(os.path.join(d, "x"))]


SLOW = pytest.mark.slow  # seconds to tens of seconds each: dfs runs every interleaving


@pytest.mark.parametrize("program", [rmtree_vs_write, walk_vs_rename, pytest.param(replace_vs_read, marks=SLOW),
                                     pytest.param(listing_vs_create, marks=SLOW),
                                     pytest.param(copy_vs_write, marks=SLOW), descriptors])
def test_dpor_reaches_every_outcome_dfs_does(program):
    outcomes = {"dpor": set(), "dfs": set()}

    def run(strategy):
        def test():
            d = tempfile.mkdtemp()
            os.mkdir(os.path.join(d, "sub"))
            _write(os.path.join(d, "x"), "old")
            results = {}
            threads = [threading.Thread(target=lambda n=n, op=op: results.__setitem__(n, op()))
                       for n, op in enumerate(program(d))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            outcomes[strategy].add((repr(sorted(results.items())).replace(d, "D"), _tree(d)))
            shutil.rmtree(d)

        return test

    dfs = racecheck.explore(run("dfs"), strategy="dfs", preemption_bound=None, schedules=5000, memory=False)
    dpor = racecheck.explore(run("dpor"), strategy="dpor", schedules=5000, memory=False)
    for result in (dfs, dpor):
        assert result.ok and result.exhausted, result.failure and result.failure.exception
    assert outcomes["dpor"] == outcomes["dfs"]
    assert dpor.schedules <= dfs.schedules
    assert len(outcomes["dfs"]) > 1  # the program does race: its outcomes depend on the order
