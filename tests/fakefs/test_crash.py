"""Power loss at every scheduling point of the write-temp / fsync / rename / dir-fsync protocol.

Crash point k (after the k-th mutating operation) and the journal prefix the power loss keeps are both run
choices; here they are enumerated exhaustively with a scripted FakeRun (test_engine_integration.py does the same
through racecheck.explore).
"""

from __future__ import annotations

import os

import pytest
import racecheck.fakefs as fakefs
from fakerun_helpers import FakeRun
from racecheck.errors import Crashed
from racecheck.runtime import bind

fos = fakefs.os_facade
fopen = fakefs.fake_open
FINAL = "/racefs/ckpt/last.ckpt"
OLD, NEW = b"old checkpoint " * 3, b"NEW CHECKPOINT " * 4


def save(final: str, data: bytes, durable: bool) -> None:
    tmp = final + ".tmp"
    with fopen(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if durable:
            fos.fsync(f.fileno())
    fos.replace(tmp, final)
    if durable:
        fd = fos.open(os.path.dirname(final), os.O_RDONLY)
        try:
            fos.fsync(fd)
        finally:
            fos.close(fd)


def run_once(spec: fakefs.FakeFS, choices: dict, with_old: bool, durable: bool):
    """One run: durable setup outside the run, the save inside; returns (run, survivor bytes or None)."""
    run = FakeRun(choices)
    store = fakefs.begin_run(run, spec)
    fos_setup(store, with_old)
    bind(run, object())
    try:
        save(FINAL, NEW, durable)
    except Crashed:
        pass
    finally:
        bind(None, None)
    fakefs.end_run(run, crashed=run.crash_reason is not None)
    return run, store.read_bytes(FINAL)


def fos_setup(store, with_old: bool) -> None:
    """Unbound (no run): no scheduling points, no faults; then make it all durable."""
    store.mkdir("/racefs/ckpt")
    if with_old:
        h = store.open(FINAL, os.O_WRONLY | os.O_CREAT)
        store.h_write(h, OLD)
        store.h_close(h)
    store.sync()


def all_outcomes(spec, with_old: bool, durable: bool) -> dict:
    """{(k, journal prefix[, data choice]): survivor} over every crash point and every power-loss choice."""
    probe, _ = run_once(spec, {"fs.crash": 0}, with_old, durable)
    assert probe.crash_reason is None
    points = spec.fault_window
    outcomes = {}
    for k in range(1, points + 1):
        run, survivor = run_once(spec, {"fs.crash": k}, with_old, durable)
        if run.crash_reason is None:
            break  # past the last operation
        arity = dict((label, n) for label, n, _ in run.drawn)
        for j in range(arity.get("fs.crash.journal", 1)):
            data_labels = [label for label in arity if label.startswith("fs.crash.data")]
            combos = [{}]
            for label in data_labels:
                combos = [dict(c, **{label: v}) for c in combos for v in range(arity[label])]
            for combo in combos:
                again, survivor = run_once(spec, {"fs.crash": k, "fs.crash.journal": j, **combo}, with_old, durable)
                outcomes[(k, j, tuple(sorted(combo.items())))] = (again.crash_reason, survivor)
    return outcomes


SPEC = fakefs.FakeFS(crash=True, fault_window=12)
TORN = fakefs.FakeFS(crash=True, fault_window=12, torn_writes=True)


@pytest.mark.parametrize("spec", [SPEC, TORN], ids=["lose-unsynced", "torn-writes"])
def test_durable_protocol_survivor_is_old_or_new(spec):
    outcomes = all_outcomes(spec, with_old=True, durable=True)
    assert len(outcomes) >= 8
    bad = {key: v for key, v in outcomes.items() if v[1] not in (OLD, NEW)}
    assert not bad, f"partial survivors: {bad}"
    assert {v[1] for v in outcomes.values()} == {OLD, NEW}
    last = max(k for k, _, _ in outcomes)
    assert all(v[1] == NEW for (k, _, _), v in outcomes.items() if k == last), "after dir fsync the save is durable"


def test_durable_first_save_is_absent_or_new():
    outcomes = all_outcomes(SPEC, with_old=False, durable=True)
    assert {v[1] for v in outcomes.values()} == {None, NEW}


@pytest.mark.parametrize("spec", [SPEC, TORN], ids=["lose-unsynced", "torn-writes"])
def test_without_fsyncs_a_crash_can_lose_the_checkpoint(spec):
    """No fsync before the rename: the journal may commit the rename while the data is lost, leaving an empty
    (or, with torn writes, partial) file under the final name: the old checkpoint is gone and the new one too."""
    outcomes = all_outcomes(spec, with_old=True, durable=False)
    survivors = {v[1] for v in outcomes.values()}
    assert survivors - {OLD, NEW}, "expected a crash that loses both versions"
    assert b"" in survivors
    if spec.torn_writes:
        assert any(s and s not in (OLD, NEW) for s in survivors), "a torn, partial file under the final name"


def test_power_loss_invalidates_handles_and_keeps_durable_tree():
    run = FakeRun()
    store = fakefs.begin_run(run, SPEC)
    fos_setup(store, with_old=True)
    h = store.open("/racefs/ckpt/open.bin", os.O_WRONLY | os.O_CREAT)
    store.h_write(h, b"unsynced")
    store.power_loss()
    assert store.files() == [(FINAL, len(OLD), store.files()[0][2])]
    assert store.open_handles() == []
    store.h_close(h)  # a handle from before the power loss closes quietly
    with pytest.raises(OSError):
        store.h_write(h, b"x")
