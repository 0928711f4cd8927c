"""Directory descriptors, differential: ``os.open`` of a directory, then ``*at()`` calls relative to it
(``stat``/``lstat``/``mkdir``/``rmdir``/``remove``/``open`` with ``dir_fd``, ``scandir(fd)``), including after
the directory was renamed or removed, give the same results on a real tmpfs directory and on the fake (posix).
They are what CPython's ``shutil.rmtree`` walks by on Linux, which the fake runs (``stdlib_clone``)."""

from __future__ import annotations

import os
import shutil

import real_tmpfs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DIRS = ["d", "d/e"]
# "." and ".." are left out here: under a descriptor of a directory removed since, Linux still finds the directory
# itself and its former parent there, the fake resolves no names at all (a documented limit; nothing racecheck
# runs relies on it). They are compared under live directories in test_dot_names_under_a_live_directory.
NAMES = ["a", "e", "x", "e/a", "e/."]
step = st.one_of(
    st.tuples(st.just("opendir"), st.sampled_from(DIRS + ["missing", "f"])),
    st.tuples(st.sampled_from(["stat", "lstat", "mkdir", "rmdir", "remove", "create", "scandir_names"]),
              st.integers(0, 2), st.sampled_from(NAMES)),
    st.tuples(st.just("scandir"), st.integers(0, 2)),
    st.tuples(st.sampled_from(["rename_dir", "remove_dir"]), st.sampled_from(DIRS)),
)


def program(root: str, steps: list) -> list:
    os.makedirs(f"{root}/d/e")
    with open(f"{root}/f", "wb") as f:
        f.write(b"f")
    fds: list[int] = []
    out: list = []
    try:
        for kind, *args in steps:
            try:
                out.append(_step(root, fds, kind, args))
            except OSError as exc:
                out.append((type(exc).__name__, exc.errno))
    finally:
        for fd in fds:
            os.close(fd)
    return out


def _step(root: str, fds: list, kind: str, args: list):
    if kind == "opendir":
        fds.append(os.open(f"{root}/{args[0]}", os.O_RDONLY))
        return "fd"
    if kind in ("rename_dir", "remove_dir"):
        if kind == "rename_dir":
            return os.rename(f"{root}/{args[0]}", f"{root}/moved-{args[0].replace('/', '-')}")
        return shutil.rmtree(f"{root}/{args[0]}")
    if args[0] >= len(fds):
        return "no-fd"
    fd = fds[args[0]]
    if kind == "scandir":
        with os.scandir(fd) as it:
            return sorted((e.name, e.path, e.is_dir(), e.stat().st_size if e.is_file() else None) for e in it)
    name = args[1]
    if kind in ("stat", "lstat"):
        st_ = getattr(os, kind)(name, dir_fd=fd)
        return (st_.st_mode >> 12, st_.st_size if st_.st_mode >> 12 == 8 else None)  # a directory's size: the fs's
    if kind == "mkdir":
        return os.mkdir(name, dir_fd=fd)
    if kind == "rmdir":
        return os.rmdir(name, dir_fd=fd)
    if kind == "remove":
        return os.remove(name, dir_fd=fd)
    if kind == "create":
        new = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=fd)
        os.write(new, b"xy")
        os.close(new)
        return "created"
    with os.scandir(fd) as it:  # scandir_names
        return sorted(e.name for e in it)


def run_real(steps: list) -> list:
    return real_tmpfs.on_real(lambda root: program(root, steps), "racefs-dirfd-")


def run_fake(steps: list) -> list:
    return real_tmpfs.on_fake(lambda root: program(root, steps))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=10))
def test_directory_descriptors_match_real_linux(steps):
    real, fake = run_real(steps), run_fake(steps)
    assert real == fake, f"steps: {steps}\nreal: {real}\nfake: {fake}"


def test_rmtree_of_a_path_through_dotdot_removes_what_linux_removes():
    """``rmtree("d/..")`` on Linux removes the directory's entries by descriptor (``d`` first, as it is listed
    first, then ``a``) and fails only at the end; a walk by path lost ``a`` once ``d`` was gone."""
    steps = [("opendir", "d"), ("create", 0, "a")]  # warm-up: the fd path works at all
    assert run_real(steps) == run_fake(steps)

    def body(root: str):
        with open(f"{root}/a", "wb"):
            pass
        os.mkdir(f"{root}/d")
        try:
            shutil.rmtree(f"{root}/d/..")
        except OSError as exc:
            return (type(exc).__name__, exc.errno, sorted(os.listdir(root)))
        return None

    assert real_tmpfs.on_real(body, "racefs-dirfd-") == real_tmpfs.on_fake(body) == ("FileNotFoundError", 2, [])


def test_dot_names_under_a_live_directory():
    """``.`` and ``..`` relative to a descriptor, as Linux resolves them, also after the directory was renamed."""
    steps = [("opendir", "d"), ("stat", 0, "."), ("mkdir", 0, "../a"), ("create", 0, "../b"), ("stat", 0, "../f"),
             ("remove", 0, "../b"), ("rmdir", 0, "../a"), ("mkdir", 0, "."), ("rmdir", 0, "."),
             ("rename_dir", "d"), ("stat", 0, "."), ("mkdir", 0, "../c"), ("scandir", 0)]
    assert run_real(steps) == run_fake(steps)
