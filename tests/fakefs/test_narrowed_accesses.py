"""An operation that turns out to change nothing says so: a mkdir of a directory that is there, a remove of a name
that is not, only read the name. Their points declare the change they may make; once run, the step narrows to what
it did (``Run.narrow``), so two writers that both ``makedirs(exist_ok=True)`` their shared directory commute there
instead of counting as a race on it, while a mkdir that does create still conflicts with everything that reads the
name."""

from __future__ import annotations

import errno
import os
import threading

import pytest
import racecheck
from fakerun_helpers import bound_run
from racecheck import fakefs
from racecheck.runtime.access import CREATE, READ, REMOVE, Access, ObjKind


def _kinds(accesses: tuple, obj: str) -> set[str]:
    return {a.kind for a in accesses if isinstance(a, Access) and str(a.obj) == obj}


def test_a_mkdir_that_creates_declares_and_keeps_create():
    with bound_run() as run:
        run.resources["fakefs"].mkdir("/racefs/d")
    assert _kinds(run.accesses[-1], "file /racefs/d") == {CREATE}


@pytest.mark.parametrize("exist_ok", [True, False])
def test_a_mkdir_of_a_directory_that_is_there_only_read_its_name(exist_ok):
    with bound_run() as run:
        store = run.resources["fakefs"]
        store.mkdir("/racefs/d")
        if exist_ok:
            store.mkdir("/racefs/d", exist_ok=True)
        else:
            with pytest.raises(FileExistsError):
                store.mkdir("/racefs/d")
    assert _kinds(run.accesses[-1], "file /racefs/d") == {READ}
    assert not any(a.obj.kind is ObjKind.DIR for a in run.accesses[-1])  # no entry changed


def test_a_remove_of_a_name_that_is_not_there_only_read_it():
    with bound_run() as run:
        store = run.resources["fakefs"]
        with pytest.raises(OSError) as raised:
            store.remove("/racefs/missing")
        assert raised.value.errno == errno.ENOENT
        assert _kinds(run.accesses[-1], "file /racefs/missing") == {READ}
        store.h_close(store.open("/racefs/there", os.O_WRONLY | os.O_CREAT))
        store.remove("/racefs/there")
    assert _kinds(run.accesses[-1], "file /racefs/there") == {REMOVE}


def _two_writers_sharing_a_directory() -> None:
    directory = fakefs.root() + "/ckpts"

    def write(name: str) -> None:
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        with open(f"{directory}/{name}", "wb") as handle:
            handle.write(name.encode())

    threads = [threading.Thread(target=write, args=(name,)) for name in ("a.ckpt", "b.ckpt")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(os.listdir(directory)) == ["a.ckpt", "b.ckpt"]


def _classes() -> int:
    result = racecheck.explore(_two_writers_sharing_a_directory, strategy="dpor", schedules=1000, fs="posix")
    assert result.ok and result.exhausted, result.summary()
    return result.interleavings


def test_who_creates_the_shared_directory_is_the_only_race_between_two_writers(monkeypatch):
    """Each thread's mkdir either creates the directory or finds it there: the two orders of the two mkdirs are
    the two classes, and everything else (two different files) commutes. Without narrowing the losing mkdir
    counts as a second creation, which conflicts with every lookup the other thread makes under the directory."""
    assert _classes() == 2
    from racecheck.fakefs.store.core import StoreCore

    monkeypatch.setattr(StoreCore, "narrow", lambda self, run, access: None)
    assert _classes() > 2
