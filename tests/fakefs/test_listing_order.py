"""Directory listing order, differential: the same creates, renames and removes in one directory list in the same
order (``os.listdir`` and ``os.scandir``, unsorted) on a real tmpfs directory and on the fake (posix).

Order is the filesystem's business (ext4 lists in hash order), so code under test that depends on it (a
``copytree`` into its own subtree copies what it lists first) is only reproduced faithfully where the fake lists
like the real one. tmpfs lists newest-first on most kernels (the fake's native posix order), in creation order on
some: the fake gets the machine's order (``FakeFS(listing_order=...)``, probed in ``real_tmpfs``); in both, a
rename's target is a new entry. A /dev/shm that lists in neither order skips these tests, saying so.
"""

from __future__ import annotations

import os
import shutil

import pytest
import racecheck.fakefs as fakefs
import real_tmpfs
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


def run_real(steps: list) -> list:
    return real_tmpfs.on_real(lambda root: program(root, steps), "racefs-order-")


def run_fake(steps: list) -> list:
    return real_tmpfs.on_fake(lambda root: program(root, steps))


@pytest.fixture(scope="module", autouse=True)
def _real_order_known():
    if real_tmpfs.real_base() is None or real_tmpfs.listing_order() is None:
        pytest.skip("this machine's /dev/shm lists neither newest- nor oldest-first (not tmpfs?)")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14))
def test_listing_order_matches_real_tmpfs(steps):
    real, fake = run_real(steps), run_fake(steps)
    assert real == fake, f"steps: {steps}\nreal: {real}\nfake: {fake}"


def test_native_order_is_newest_first_and_the_other_is_chosen_by_name():
    def listed(spec):
        steps = [("create", "e"), ("create", "a"), ("rename", "e", "b")]
        return real_tmpfs.on_fake(lambda root: program(root, steps), fs=spec)[-1][0]

    assert listed("posix") == ["b", "a", "sub"]
    assert listed(fakefs.FakeFS(listing_order="newest-first")) == ["b", "a", "sub"]
    assert listed(fakefs.FakeFS(listing_order="oldest-first")) == ["sub", "a", "b"]
    assert listed("windows") == ["sub", "a", "b"]  # creation order; a rename's target keeps its place
    with pytest.raises(ValueError, match="listing_order"):
        fakefs.FakeFS(listing_order="sorted")
    assert "listing_order" not in fakefs.FakeFS().config_key()  # tokens recorded before the field still match
    assert "listing_order='oldest-first'" in fakefs.FakeFS(listing_order="oldest-first").config_key()


def test_copytree_into_itself_copies_what_it_lists_first():
    """The case the long fuzz run found: ``d`` holds ``e`` then ``a``; copying ``d`` into ``d/a`` copies first
    what the directory lists first: ``a`` while it is still empty (newest first), or ``e`` and then ``a`` with
    ``e`` already in it (oldest first), on tmpfs and on the fake alike."""

    def tree(root: str) -> list:
        os.makedirs(f"{root}/d/e")
        os.mkdir(f"{root}/d/a")
        shutil.copytree(f"{root}/d/", f"{root}/d/a", dirs_exist_ok=True)
        return sorted(os.path.relpath(top, root) for top, _, _ in os.walk(root))

    expected = [".", "d", "d/a", "d/a/a", "d/a/e", "d/e"]
    if real_tmpfs.listing_order() == "oldest-first":
        expected = [".", "d", "d/a", "d/a/a", "d/a/a/e", "d/a/e", "d/e"]
    assert real_tmpfs.on_real(tree, "racefs-order-") == expected
    assert real_tmpfs.on_fake(tree) == expected
