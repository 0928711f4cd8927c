"""Differential fuzzing: one generated program, run on a real tmpfs directory and on the fake (posix) INSIDE an
exploration, must give the same outcome at every step and the same final tree.

The program is plain ``os`` / ``open`` / ``shutil`` / ``tempfile`` / ``pathlib`` code in this module: outside a
run it reaches the real OS; inside ``racecheck.explore(fs="posix")`` this module and pathlib are instrumented,
so the very same calls reach the store. Per step we compare the return value (paths made relative to the root),
or the exception class and errno. Names include odd spellings (``a/``, ``x/../a``, ``d/.``, ``d/..``) that
the kernel resolves component by component.
"""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import stat
import sys
import tempfile

import pytest
import racecheck
import racecheck.fakefs as fakefs
import real_tmpfs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ["a", "b", "d", "d/a", "d/e", "d/e/f", "x/y", "a/", "d/", "x/../a", "d/.", "d/..", "d/e/../a", "a/b",
         "d/e/"]
BINARY_MODES = ["rb", "wb", "ab", "xb", "r+b", "w+b", "a+b"]
TEXT_MODES = ["r", "w", "a", "r+", "w+"]
DATA = st.binary(min_size=0, max_size=10)
H = st.integers(0, 3)

op = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(NAMES), st.sampled_from(BINARY_MODES), st.sampled_from([-1, 0])),
    st.tuples(st.just("open"), st.sampled_from(NAMES), st.sampled_from(TEXT_MODES), st.just(-1)),
    st.tuples(st.just("write"), H, DATA),
    st.tuples(st.just("read"), H, st.integers(-1, 6)),
    st.tuples(st.just("seek"), H, st.integers(0, 8), st.sampled_from([0, 1, 2])),
    st.tuples(st.just("truncate"), H, st.sampled_from([None, 0, 2, 9])),
    st.tuples(st.sampled_from(["close", "flush", "fsync", "tell", "fileno", "readable", "writable"]), H),
    st.tuples(st.sampled_from(["rename", "replace", "copyfile", "copy", "copy2", "move", "copytree",
                               "copytree_ok"]), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.sampled_from(["remove", "mkdir", "makedirs", "makedirs_ok", "rmdir", "listdir", "scandir",
                               "stat", "lstat", "exists", "isfile", "isdir", "lexists", "getsize", "rmtree",
                               "walk", "mkstemp", "mkdtemp", "ntf", "ntf_gone"]),
              st.sampled_from(NAMES)),
    st.tuples(st.sampled_from(["p_write", "p_read", "p_exists", "p_is_file", "p_mkdir", "p_mkdir_parents",
                               "p_unlink", "p_iterdir", "p_touch", "p_rmdir", "p_stat"]), st.sampled_from(NAMES)),
    st.tuples(st.just("p_rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
)


# A copytree into its own subtree (``copytree d/.. d/a``) recurses until something stops it. Under Python's default
# recursion limit that was Python: how deep it got depended on the stack below the call (pytest's main thread
# against a carrier thread under explore) and on the frames each side's calls take (the fake's os calls are Python
# code), not on the filesystem. So every program runs with room for more calls than PATH_MAX allows levels, under
# roots of the same length on both sides: the limit met is Linux's ENAMETOOLONG, at the same depth, or a
# difference. The roots are long (ROOT_LENGTH bytes, nested directories on the real side), which leaves a few
# hundred levels below them: a runaway copytree ends in well under a second instead of twenty.
ROOT_LENGTH = 3500
DEEP_HEADROOM = 12_000


def _frames_left() -> int:
    """How many more Python calls the calling thread can make before a RecursionError."""
    def down(depth: int) -> int:
        try:
            return down(depth + 1)
        except RecursionError:
            return depth
    return down(0)


def with_headroom(frames: int, call):
    """``call()`` with exactly ``frames`` calls left before a RecursionError, whatever the stack below it."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old - _frames_left() + frames)
    try:
        return call()
    finally:
        sys.setrecursionlimit(old)


def _outcome(exc: BaseException) -> tuple:
    if isinstance(exc, shutil.Error) and not isinstance(exc, OSError):
        return ("shutil.Error",)
    if isinstance(exc, OSError):
        return (type(exc).__name__, exc.errno)
    return (type(exc).__name__,)


class Program:
    """Runs generated steps under ``root`` and records what each one gave."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.files: list = []

    def p(self, name: str) -> str:
        return f"{self.root}/{name}"

    def rel(self, value):
        if isinstance(value, (str, pathlib.PurePath)):
            text = os.fspath(value)
            return text.replace(self.root, "<root>", 1) if text.startswith(self.root) else text
        if isinstance(value, list):
            return [self.rel(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.rel(v) for v in value)
        return value

    def run(self, steps: list) -> list:
        out = []
        for action in steps:
            try:
                out.append(self.rel(self.step(action)))
            except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
                out.append(_outcome(exc))
        for f in self.files:
            try:
                f.close()
            except Exception:  # noqa: BLE001,S110 - closing a broken file may fail on both sides alike
                pass
        return out

    def handle(self, i: int):
        return self.files[i] if i < len(self.files) else None

    def step(self, action: tuple):  # noqa: C901 - one branch per operation keeps the mapping readable
        kind, *args = action
        if kind == "open":
            name, mode, buffering = args
            if "b" not in mode and buffering == 0:
                buffering = -1
            kw = {} if "b" in mode else {"encoding": "latin-1"}
            f = open(self.p(name), mode, buffering, **kw)
            self.files.append(f)
            return ("handle", len(self.files) - 1, {"FakeRawIO": "FileIO"}.get(type(f).__name__, type(f).__name__))
        if kind in ("write", "read", "seek", "truncate", "close", "flush", "fsync", "tell", "fileno", "readable",
                    "writable"):
            f = self.handle(args[0])
            if f is None:
                return "no-handle"
            text = isinstance(f, __import__("io").TextIOBase)
            if kind == "write":
                return f.write(args[1].decode("latin-1") if text else args[1])
            if kind == "read":
                return f.read(args[1])
            if kind == "seek":
                offset, whence = args[1], args[2]
                if text and (offset or whence == 1):
                    offset, whence = 0, 0
                return f.seek(offset, whence)
            if kind == "truncate":
                return f.truncate(args[1])
            if kind == "fsync":
                return os.fsync(f.fileno())
            if kind == "fileno":
                return type(f.fileno()).__name__
            return getattr(f, kind)()
        if kind in ("rename", "replace"):
            return getattr(os, kind)(self.p(args[0]), self.p(args[1]))
        if kind in ("copyfile", "copy", "copy2", "move"):
            return getattr(shutil, kind)(self.p(args[0]), self.p(args[1]))
        if kind in ("copytree", "copytree_ok"):
            return shutil.copytree(self.p(args[0]), self.p(args[1]), dirs_exist_ok=kind == "copytree_ok")
        name = args[0]
        path = self.p(name)
        if kind == "remove":
            return os.remove(path)
        if kind == "mkdir":
            return os.mkdir(path)
        if kind in ("makedirs", "makedirs_ok"):
            return os.makedirs(path, exist_ok=kind == "makedirs_ok")
        if kind == "rmdir":
            return os.rmdir(path)
        if kind == "listdir":
            return sorted(os.listdir(path))
        if kind == "scandir":
            with os.scandir(path) as it:
                return sorted((e.name, e.is_dir(), e.is_file()) for e in it)
        if kind in ("stat", "lstat"):
            s = getattr(os, kind)(path)
            return (stat.S_IFMT(s.st_mode), s.st_size if stat.S_ISREG(s.st_mode) else None)
        if kind in ("exists", "isfile", "isdir", "lexists"):
            return getattr(os.path, kind)(path)
        if kind == "getsize":  # a directory's size is the filesystem's business (tmpfs 40+, ext4 4096)
            size = os.path.getsize(path)
            return size if os.path.isfile(path) else "directory"
        if kind == "rmtree":
            return shutil.rmtree(path)
        if kind == "walk":
            return sorted((self.rel(top), sorted(dirs), sorted(files)) for top, dirs, files in os.walk(path))
        if kind == "mkstemp":
            fd, tmp = tempfile.mkstemp(dir=path)
            os.write(fd, b"tmp")
            os.close(fd)
            os.replace(tmp, self.p("t"))
            return "made"
        if kind == "mkdtemp":
            tmp = tempfile.mkdtemp(dir=path)
            os.rename(tmp, self.p("td"))
            return "made"
        if kind in ("ntf", "ntf_gone"):
            with tempfile.NamedTemporaryFile(dir=path) as f:
                f.write(b"x")
                f.flush()
                if kind == "ntf_gone":
                    os.remove(f.name)
                return os.path.exists(f.name)
        pth = pathlib.Path(path)
        if kind == "p_write":
            return pth.write_bytes(b"pathlib")
        if kind == "p_read":
            return pth.read_bytes()
        if kind == "p_exists":
            return pth.exists()
        if kind == "p_is_file":
            return pth.is_file()
        if kind == "p_mkdir":
            return pth.mkdir()
        if kind == "p_mkdir_parents":
            return pth.mkdir(parents=True, exist_ok=True)
        if kind == "p_unlink":
            return pth.unlink()
        if kind == "p_iterdir":
            return sorted(p.name for p in pth.iterdir())
        if kind == "p_touch":
            return pth.touch()
        if kind == "p_rmdir":
            return pth.rmdir()
        if kind == "p_stat":
            return stat.S_IFMT(pth.stat().st_mode)
        if kind == "p_rename":
            return self.rel(pth.rename(self.p(args[1])))
        raise AssertionError(kind)

    def tree(self) -> list:
        out = []
        for top, _dirs, files in os.walk(self.root):
            rel = os.path.relpath(top, self.root)
            out.append((rel, "dir"))
            for name in files:
                with open(os.path.join(top, name), "rb") as f:
                    out.append((os.path.join(rel, name), f.read()))
        return sorted(out)


def _padded(top: str) -> str:
    """``top`` and directories below it, ROOT_LENGTH bytes in all (names of at most 200 bytes)."""
    parts = [top]
    while len("/".join(parts)) < ROOT_LENGTH:
        parts.append("p" * min(200, ROOT_LENGTH - len("/".join(parts)) - 1))
    return "/".join(parts)


def run_real(steps: list) -> tuple[list, list]:
    top = tempfile.mkdtemp(prefix="racefs-fuzz-", dir=real_tmpfs.real_base())
    try:
        root = _padded(top)
        os.makedirs(root)
        prog = Program(root)
        return with_headroom(DEEP_HEADROOM, lambda: (prog.run(steps), prog.tree()))
    finally:
        with_headroom(DEEP_HEADROOM, lambda: shutil.rmtree(top, ignore_errors=True))


def run_fake(steps: list) -> tuple[list, list]:
    got: dict = {}

    def program() -> None:
        prog = Program(fakefs.root())
        got["out"], got["tree"] = with_headroom(DEEP_HEADROOM, lambda: (prog.run(steps), prog.tree()))

    # the real run's root: mkdtemp's <base>/racefs-fuzz-XXXXXXXX, padded; the same length here, so PATH_MAX falls alike
    spec = fakefs.FakeFS(root=_padded(f"{real_tmpfs.real_base() or tempfile.gettempdir()}/racefs-fuzz-fakeroot"),
                         listing_order=real_tmpfs.listing_order() or "native")  # this kernel's tmpfs order
    result = racecheck.explore(program, fs=spec, schedules=1, strategy="random", seed=0, shrink_budget=0)
    assert result.ok, result.failure
    return got["out"], got["tree"]


def check(steps: list) -> None:
    real_out, real_tree = run_real(steps)
    fake_out, fake_tree = run_fake(steps)
    for i, (a, r, f) in enumerate(zip(steps, real_out, fake_out, strict=True)):
        assert r == f, f"step {i} {a}: real {r!r} != fake {f!r}\nsteps: {steps}"
    assert real_tree == fake_tree, f"final trees differ\nsteps: {steps}"


SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=250, **SETTINGS)
@given(st.lists(op, min_size=1, max_size=16))
def test_fake_posix_matches_real_linux(steps):
    check(steps)


@pytest.mark.slow
@settings(max_examples=5000, **SETTINGS)
@given(st.lists(op, min_size=1, max_size=30))
def test_fake_posix_matches_real_linux_long(steps):
    check(steps)


# The divergences the audit found, pinned as plain examples (each also reachable by the fuzzer).
PINNED = [
    [("open", "a", "wb", -1), ("write", 0, b"xy"), ("close", 0), ("copyfile", "a", "a"), ("copy", "a", "a")],
    [("mkdir", "d"), ("copytree", "d", "d/e"), ("copytree", "missing", "z")],
    [("mkdir", "d"), ("move", "d", "d"), ("move", "d", "d/e")],
    [("open", "a", "wb", 0), ("close", 0), ("tell", 0), ("fileno", 0), ("write", 0, b"x"), ("read", 0, 1),
     ("seek", 0, 0, 0), ("truncate", 0, 0)],
    [("open", "a", "wb", 0), ("read", 0, 1), ("open", "a", "rb", 0), ("write", 1, b"x"), ("truncate", 1, 0)],
    [("makedirs", "d/e"), ("open", "d/e/f", "wb", -1), ("close", 0), ("rename", "d/e/f", "d"),
     ("rename", "d/e/f", "d/e")],
    [("ntf_gone", "d"), ("mkdir", "d"), ("ntf_gone", "d"), ("ntf", "d")],
    [("open", "x/../a", "wb", -1), ("open", "a", "wb", -1), ("close", 1), ("open", "a/", "wb", -1),
     ("stat", "a/"), ("mkdir", "d"), ("rmtree", "d/."), ("exists", "d")],
    # found by the long fuzz run: a copytree into its own subtree recursed deeper on the side with the shallower
    # stack (the fake's carrier thread), so the final trees differed by 19 levels of d/a
    [("mkdir", "d"), ("copytree", "d/..", "d/a")],
    [("mkdir", "d"), ("open", "d/e", "wb", -1), ("close", 0), ("copytree_ok", "d/.", "d/a")],
    # rmtree by path (the fake's, before) against Linux's by descriptor: "d/.." was gone once d was removed
    [("open", "a", "wb", -1), ("mkdir", "d"), ("rmtree", "d/.."), ("open", "a", "rb", -1)],
    # a write of 0 bytes has no effect: no zero fill up to a position past the end, no move to the end on append
    [("open", "a", "wb", 0), ("seek", 0, 1, 0), ("write", 0, b"")],
    [("open", "a", "ab", 0), ("seek", 0, 1, 0), ("write", 0, b""), ("seek", 0, 0, 1)],
]


@pytest.mark.parametrize("steps", PINNED, ids=[f"audit-{i}" for i in range(len(PINNED))])
def test_audit_divergences(steps):
    check(steps)


def test_closed_file_errors_are_value_errors():
    """Spelled out for the reader: after close(), CPython raises ValueError, never a stale descriptor."""
    def program():
        f = open(fakefs.root() + "/a", "wb", buffering=0)
        f.close()
        for call in (f.tell, f.fileno, lambda: f.write(b"x"), lambda: f.seek(0)):
            with pytest.raises(ValueError, match="closed file"):
                call()
        g = open(fakefs.root() + "/a", "rb", buffering=0)
        with pytest.raises(__import__("io").UnsupportedOperation):
            g.write(b"x")
        g.close()
        with pytest.raises(OSError) as info:
            open(fakefs.root() + "/a/", "rb")
        assert info.value.errno == errno.ENOTDIR

    assert racecheck.explore(program, fs="posix", schedules=1).ok
