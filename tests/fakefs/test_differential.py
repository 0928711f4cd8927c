"""Differential: the same operation sequences against the real OS (a tmp dir) and the fake in posix mode.

Outcomes compared per step (return value, or exception class + errno) and at the end (tree listing with file
contents). Hypothesis generates the sequences; paths are compared relative to each side's root.
"""

from __future__ import annotations

import builtins
import os
import shutil
import tempfile

import racecheck.fakefs as fakefs
from fakerun_helpers import bound_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ["a", "b", "d", "d/a", "d/e", "d/e/f", "x/y"]
DATA = st.binary(min_size=0, max_size=12)
MODES = ["wb", "ab", "xb", "rb", "r+b"]

op = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(NAMES), st.sampled_from(MODES)),
    st.tuples(st.just("write"), st.integers(0, 2), DATA),
    st.tuples(st.just("read"), st.integers(0, 2), st.integers(-1, 8)),
    st.tuples(st.just("seek"), st.integers(0, 2), st.integers(0, 6)),
    st.tuples(st.just("close"), st.integers(0, 2)),
    st.tuples(st.just("flush"), st.integers(0, 2)),
    st.tuples(st.sampled_from(["rename", "replace"]), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.sampled_from(["remove", "mkdir", "listdir", "stat", "exists", "isdir", "makedirs"]),
              st.sampled_from(NAMES + [""])),
    # the mount root is a mount point (EBUSY to remove or rename), so rmdir is drawn on names below it only
    st.tuples(st.just("rmdir"), st.sampled_from(NAMES)),
)


class Side:
    """One filesystem under test, driven through an ``os`` module and an ``open`` function."""

    def __init__(self, root: str, os_mod, open_fn) -> None:
        self.root, self.os, self.open = root, os_mod, open_fn
        self.files: list = []

    def p(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def step(self, action: tuple):
        kind, *args = action
        o = self.os
        try:
            if kind == "open":
                self.files.append(self.open(self.p(args[0]), args[1]))
                return len(self.files) - 1
            if kind in ("write", "read", "seek", "close", "flush"):
                live = [f for f in self.files if not f.closed]
                if args[0] >= len(live):
                    return "no-handle"
                f = live[args[0]]
                if kind == "write":
                    return f.write(args[1])
                if kind == "read":
                    return f.read(args[1])
                if kind == "seek":
                    return f.seek(args[1])
                return getattr(f, kind)()
            if kind in ("rename", "replace"):
                return getattr(o, kind)(self.p(args[0]), self.p(args[1]))
            if kind == "stat":
                s = o.stat(self.p(args[0]))
                return (s.st_mode & 0o170000, s.st_size if s.st_mode & 0o100000 else None)
            if kind == "exists":
                return o.path.exists(self.p(args[0]))
            if kind == "isdir":
                return o.path.isdir(self.p(args[0]))
            if kind == "listdir":
                return sorted(o.listdir(self.p(args[0])))
            if kind == "makedirs":
                return o.makedirs(self.p(args[0]), exist_ok=True)
            return getattr(o, kind)(self.p(args[0]))
        except OSError as exc:
            return (type(exc).__name__, exc.errno)
        except ValueError as exc:  # I/O on a file opened read-only etc.
            return ("ValueError", type(exc).__name__)

    def close_all(self) -> None:
        for f in self.files:
            try:
                f.close()
            except OSError:
                pass

    def tree(self) -> list:
        out = []
        for top, _dirs, files in self.os.walk(self.root):
            rel = os.path.relpath(top, self.root)
            out.append((rel, "dir"))
            for name in files:
                with self.open(f"{top}/{name}", "rb") as f:
                    out.append((os.path.join(rel, name), f.read()))
        return sorted(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=14))
def test_fake_posix_matches_real_os(actions):
    real_root = tempfile.mkdtemp(prefix="racefs-diff-")
    try:
        real = Side(real_root, os, builtins.open)
        real_out = [real.step(a) for a in actions]
        real.close_all()
        real_tree = real.tree()
        with bound_run("posix"):
            fake = Side(fakefs.root(), fakefs.os_facade, fakefs.fake_open)
            fake_out = [fake.step(a) for a in actions]
            fake.close_all()
            fake_tree = fake.tree()
        for i, (a, r, f) in enumerate(zip(actions, real_out, fake_out, strict=True)):
            assert r == f, f"step {i} {a}: real {r!r} != fake {f!r}"
        assert real_tree == fake_tree
    finally:
        shutil.rmtree(real_root, ignore_errors=True)
