"""The real disk's pass-through stand-ins against the real OS, on hypothesis-generated operation sequences: the same
results, the same exceptions (type and errno) and the same directory afterwards, run by a controlled thread of an
exploration (every call a scheduling point: checked) and run plainly."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

import racecheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.runtime import current_run

NAMES = ("a", "b", "d", "d/a", "d/e", "d/e/f")
DATA = st.sampled_from([b"", b"x", b"hello", b"0123456789" * 50])

OPS = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), DATA, st.sampled_from(["wb", "ab", "xb", "r+b"])),
    st.tuples(st.just("read"), st.sampled_from(NAMES)),
    st.tuples(st.just("text"), st.sampled_from(NAMES), st.sampled_from(["", "line\n", "é"])),
    st.tuples(st.sampled_from(["remove", "rmdir", "mkdir", "makedirs", "listdir", "exists", "isfile", "isdir",
                               "size", "rmtree", "scandir", "walk", "read_text", "truncate"]),
              st.sampled_from(NAMES)),
    st.tuples(st.sampled_from(["rename", "replace", "copyfile", "copy2", "move", "copytree"]),
              st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("fd"), st.sampled_from(NAMES), DATA),
)


def apply(root: str, op: tuple) -> object:
    """One operation under ``root``, through this module's ``os``/``shutil``/``open``/``pathlib`` (the stand-ins
    during an exploration, the real ones otherwise)."""
    kind, name = op[0], os.path.join(root, op[1])
    if kind == "write":
        with open(name, op[3]) as f:
            return f.write(op[2])
    if kind == "read":
        with open(name, "rb") as f:
            return f.read()
    if kind == "text":
        return pathlib.Path(name).write_text(op[2], encoding="utf-8")
    if kind == "read_text":
        return pathlib.Path(name).read_text(encoding="utf-8", errors="replace")
    if kind in ("rename", "replace", "copyfile", "copy2", "move", "copytree"):
        other = os.path.join(root, op[2])
        fn = {"rename": os.rename, "replace": os.replace, "copyfile": shutil.copyfile, "copy2": shutil.copy2,
              "move": shutil.move, "copytree": shutil.copytree}[kind]
        out = fn(name, other)
        return None if out is None else os.path.relpath(out, root)
    if kind == "fd":
        fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, op[2])
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
            return written, os.read(fd, 1000), os.fstat(fd).st_size, os.stat(fd).st_size
        finally:
            os.close(fd)
    simple = {
        "remove": os.remove, "rmdir": os.rmdir, "mkdir": os.mkdir, "listdir": lambda p: sorted(os.listdir(p)),
        "makedirs": lambda p: os.makedirs(p, exist_ok=True), "exists": os.path.exists, "isfile": os.path.isfile,
        "isdir": os.path.isdir, "size": os.path.getsize, "rmtree": shutil.rmtree,
        "scandir": lambda p: sorted((e.name, e.is_dir()) for e in os.scandir(p)),
        "walk": lambda p: sorted((os.path.relpath(d, root), sorted(ds), sorted(fs)) for d, ds, fs in os.walk(p)),
        "truncate": lambda p: os.truncate(p, 3),
    }
    return simple[kind](name)


def play(root: str, ops: list) -> list:
    out = []
    for op in ops:
        try:
            out.append(("ok", apply(root, op)))
        except OSError as exc:
            out.append(("error", type(exc).__name__, exc.errno))
        except (ValueError, UnicodeDecodeError) as exc:
            out.append(("error", type(exc).__name__))
    return out


def tree(root: str) -> dict:
    found = {}
    for directory, _dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        found[rel] = "dir"
        for name in files:
            with open(os.path.join(directory, name), "rb") as f:
                found[os.path.join(rel, name)] = f.read()
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=8))
def test_pass_through_calls_behave_as_the_real_os(ops):
    with tempfile.TemporaryDirectory() as plain_root, tempfile.TemporaryDirectory() as run_root:
        expected = play(plain_root, ops)
        got: list = []
        points: list = []

        def body():
            run = current_run()
            before = run.steps
            got[:] = play(run_root, ops)
            points.append(run.steps - before)

        result = racecheck.explore(body, strategy="random", schedules=1, memory=False)
        assert result.ok, result.failure
        assert got == expected
        assert tree(run_root) == tree(plain_root)
        assert points and points[0] >= len(ops) - sum(1 for r in got if r[0] == "error")  # every call a point
