"""Directory listing order, differential: the same creates, renames and removes in one directory list in the same
order (``os.listdir`` and ``os.scandir``, unsorted) on a real tmpfs directory and on the fake (posix).

Order is the filesystem's business (ext4 lists in hash order), so code under test that depends on it (a
``copytree`` into its own subtree copies what it lists first) is only reproduced faithfully where the fake lists
like the real one: tmpfs, newest entry first, a rename's target becoming the newest. A machine whose /dev/shm
lists otherwise skips this test, saying so (the fake then models another kernel's tmpfs).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import racecheck
import racecheck.fakefs as fakefs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ["a", "b", "c", "d", "e"]
step = st.one_of(
    st.tuples(st.sampled_from(["create", "mkdir", "remove", "rewrite"]), st.sampled_from(NAMES)),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("through_sub"), st.sampled_from(NAMES)),  # out to a subdirectory and back
)


def program(root: str, steps: list) -> list:
    os.mkdir(f"{root}/sub")
    out = []
    for kind, *names in steps:
        path = f"{root}/{names[0]}"
        try:
            if kind == "create":
                with open(path, "xb"):
                    pass
            elif kind == "rewrite":
                with open(path, "wb") as f:
                    f.write(b"x")
            elif kind == "mkdir":
                os.mkdir(path)
            elif kind == "remove":
                os.remove(path)
            elif kind == "rename":
                os.rename(path, f"{root}/{names[1]}")
            else:
                os.rename(path, f"{root}/sub/{names[0]}")
                os.rename(f"{root}/sub/{names[0]}", path)
            out.append("ok")
        except OSError as exc:
            out.append(exc.errno)
        with os.scandir(root) as it:
            scanned = [entry.name for entry in it]
        out.append((os.listdir(root), scanned))
    return out


def _real_base() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def run_real(steps: list) -> list:
    root = tempfile.mkdtemp(prefix="racefs-order-", dir=_real_base())
    try:
        return program(root, steps)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_fake(steps: list) -> list:
    got: dict = {}

    def body() -> None:
        got["out"] = program(fakefs.root(), steps)

    result = racecheck.explore(body, fs="posix", schedules=1, strategy="random", seed=0, shrink_budget=0)
    assert result.ok, result.failure
    return got["out"]


def _real_lists_newest_first() -> bool:
    probe = [("create", "e"), ("create", "a"), ("mkdir", "c"), ("rename", "e", "b")]
    return run_real(probe)[-1] == (["b", "c", "a", "sub"], ["b", "c", "a", "sub"])


@pytest.fixture(scope="module", autouse=True)
def _tmpfs_orders_like_the_model():
    if _real_base() is None or not _real_lists_newest_first():
        pytest.skip("this machine's /dev/shm does not list newest-first: the fake models Linux 6.x tmpfs")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14))
def test_listing_order_matches_real_tmpfs(steps):
    real, fake = run_real(steps), run_fake(steps)
    assert real == fake, f"steps: {steps}\nreal: {real}\nfake: {fake}"


def test_copytree_into_itself_copies_what_it_lists_first():
    """The case the long fuzz run found: ``d`` holds ``e`` then ``a``; copying ``d`` into ``d/a`` copies ``a``
    (listed first, newest) while it is still empty, so ``d/a/a`` stays empty on tmpfs and on the fake."""

    def tree(root: str) -> list:
        os.makedirs(f"{root}/d/e")
        os.mkdir(f"{root}/d/a")
        shutil.copytree(f"{root}/d/", f"{root}/d/a", dirs_exist_ok=True)
        return sorted(os.path.relpath(top, root) for top, _, _ in os.walk(root))

    expected = [".", "d", "d/a", "d/a/a", "d/a/e", "d/e"]
    real_root = tempfile.mkdtemp(prefix="racefs-order-", dir=_real_base())
    try:
        assert tree(real_root) == expected
    finally:
        shutil.rmtree(real_root, ignore_errors=True)
    got: dict = {}
    result = racecheck.explore(lambda: got.setdefault("tree", tree(fakefs.root())), fs="posix", schedules=1,
                               shrink_budget=0)
    assert result.ok, result.failure
    assert got["tree"] == expected
