"""Through the real engine: racecheck.explore / replay with fs=..., faults and crashes replayed from tokens."""

from __future__ import annotations

import os
import threading

import pytest

racecheck = pytest.importorskip("racecheck")
if not hasattr(racecheck, "explore"):
    pytest.skip("racecheck.explore has not landed yet", allow_module_level=True)

import racecheck.fakefs as fakefs  # noqa: E402
from racecheck.fakefs import FakeFS  # noqa: E402

R = "/racefs"


def save_while_deleting():
    """A writer thread saves a checkpoint while the main thread evicts it (the Lightning #14035 shape)."""
    path = f"{R}/epoch=0-step=1.ckpt"
    with open(path, "wb") as f:
        f.write(b"seed")

    def writer():
        with open(path, "wb") as f:
            f.write(b"checkpoint bytes")
            f.flush()

    t = threading.Thread(target=writer)
    t.start()
    if os.path.exists(path):
        os.remove(path)
    t.join()


def test_windows_delete_while_writing_found_and_replayed():
    result = racecheck.explore(save_while_deleting, strategy="random", schedules=300, seed=1, fs="windows")
    assert not result.ok
    exc = result.failure.exception
    assert isinstance(exc, PermissionError) and exc.winerror == 32, result.failure.trace
    again = racecheck.replay(save_while_deleting, result.failure.token, fs="windows")
    assert not again.ok and str(again.failure.exception) == str(exc)
    assert again.failure.trace == result.failure.trace


def test_posix_delete_while_writing_is_fine():
    result = racecheck.explore(save_while_deleting, strategy="random", schedules=100, seed=1, fs="posix")
    assert result.ok, result.failure and result.failure.trace


FINAL = f"{R}/ckpt/last.ckpt"
NEW = b"NEW" * 10


def _atomic_save(durable: bool):
    os.makedirs(f"{R}/ckpt", exist_ok=True)
    with open(FINAL + ".tmp", "wb") as f:
        f.write(NEW)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    os.replace(FINAL + ".tmp", FINAL)
    if durable:
        fd = os.open(f"{R}/ckpt", os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        fd = os.open(R, os.O_RDONLY)  # the ckpt directory's own entry
        os.fsync(fd)
        os.close(fd)


def durable_save():
    _atomic_save(True)


def careless_save():
    _atomic_save(False)


SURVIVORS: list = []


def recovery():
    """Runs as a controlled thread on the survivor store after each crash."""
    data = fakefs.current_store().read_bytes(FINAL)
    SURVIVORS.append(data)
    assert data in (None, NEW), f"partial checkpoint after power loss: {data!r}"


CRASHY = FakeFS(crash=True, fault_window=16)


def test_crash_anywhere_durable_save_never_leaves_partial_file():
    SURVIVORS.clear()
    result = racecheck.explore(durable_save, strategy="dfs", schedules=500, fs=CRASHY, on_crash=recovery)
    assert result.ok, result.failure and result.failure.trace
    assert result.exhausted and result.crashes >= 8
    assert set(SURVIVORS) == {None, NEW}


def test_crash_careless_save_can_leave_an_empty_file():
    SURVIVORS.clear()
    racecheck.explore(careless_save, strategy="dfs", schedules=500, fs=CRASHY, on_crash=recovery)
    assert b"" in SURVIVORS, "the journal committed the rename, the unsynced data was lost"


def test_crash_careless_save_found_and_replayed():
    result = racecheck.explore(careless_save, strategy="dfs", schedules=500, fs=CRASHY, on_crash=recovery)
    assert not result.ok and "partial checkpoint" in str(result.failure.exception)
    again = racecheck.replay(careless_save, result.failure.token, fs=CRASHY, on_crash=recovery)
    assert not again.ok and again.failure.trace == result.failure.trace


FAULTY = FakeFS(eio=("write",), latency=(0.25,), fault_window=4)


def writes_two_files():
    for name in ("a", "b"):
        with open(f"{R}/{name}", "wb") as f:
            f.write(b"x" * 10)


def test_faults_replay_exactly_from_token():
    result = racecheck.explore(writes_two_files, strategy="random", schedules=200, seed=3, fs=FAULTY)
    assert not result.ok
    assert isinstance(result.failure.exception, OSError) and result.failure.exception.errno == 5
    for _ in range(3):
        again = racecheck.replay(writes_two_files, result.failure.token, fs=FAULTY)
        assert again.failure.trace == result.failure.trace
        assert again.failure.exception.errno == 5


def test_token_does_not_replay_on_another_filesystem():
    result = racecheck.explore(writes_two_files, strategy="random", schedules=200, seed=3, fs=FAULTY)
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(writes_two_files, result.failure.token, fs=FakeFS(eio=("write",), fault_window=5))
