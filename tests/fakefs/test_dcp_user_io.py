"""A user's checkpoint IO over ``torch.distributed.checkpoint.async_save``, explored on the fake filesystem with no
module named (issue 29): DCP's executor worker is a controlled thread, and every file it writes (pathlib opens,
``os.fsync(stream.fileno())`` on the fake descriptor, the rename of its metadata) reaches the store.

Before control by default, naming the executor's module but not ``torch.distributed.checkpoint.filesystem`` left
``os.fsync`` on the real OS with a fake descriptor: ``OSError [Errno 9]`` inside DCP, reported as the code's bug.
Here a fire-and-forget IO is found returning before its checkpoint exists, and one that waits is clean.
"""

from __future__ import annotations

import os
import warnings

import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")

import racecheck  # noqa: E402
import racecheck.fakefs  # noqa: E402


class DcpAsyncCheckpointIO:
    """A user's checkpoint IO: ``dcp.async_save`` in a single process, waited for in ``save_checkpoint`` or only
    at ``teardown`` (fire and forget)."""

    def __init__(self, wait: bool) -> None:
        self.wait = wait
        self.pending: list = []

    def save_checkpoint(self, checkpoint: dict, path: str) -> None:
        future = dcp.async_save(checkpoint, checkpoint_id=path, no_dist=True)
        if self.wait:
            future.result()
        else:
            self.pending.append(future)

    def teardown(self) -> None:
        for future in self.pending:
            future.result()


def save_then_check(wait: bool):
    """A schedule's body: save, look for the checkpoint right after the call returns, then load it back."""

    def body() -> None:
        io = DcpAsyncCheckpointIO(wait)
        path = racecheck.fakefs.root() + "/ckpt/step-1"
        io.save_checkpoint({"w": torch.arange(4.0)}, path)
        written = os.path.exists(path + "/.metadata")
        io.teardown()
        if not written:
            raise AssertionError("save_checkpoint returned before its checkpoint was written: the write leaked past it")
        state = {"w": torch.zeros(4)}
        dcp.load(state, checkpoint_id=path, no_dist=True)
        if not torch.equal(state["w"], torch.arange(4.0)):
            raise AssertionError("the checkpoint read back differs from the one saved")

    return body


@pytest.fixture(autouse=True)
def _single_process_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.distributed is disabled.*")
        yield


def test_fire_and_forget_dcp_io_is_found_leaking_its_write_and_replays():
    result = racecheck.explore(save_then_check(wait=False), fs="posix", strategy="pct", schedules=50, seed=0)
    assert not result.ok
    failure = result.failure
    assert failure.kind == "exception" and "leaked past it" in failure.message, failure.message
    assert "fs." in failure.trace and "T1" in failure.trace  # DCP's worker is a controlled thread writing the store
    again = racecheck.replay(save_then_check(wait=False), failure.token, fs="posix")
    assert again.failure.trace == failure.trace


def test_dcp_io_that_waits_is_clean_in_every_schedule():
    seen = {}

    def body() -> None:
        save_then_check(wait=True)()
        seen["files"] = sorted(path for path, _, _ in racecheck.fakefs.current_store().files())

    result = racecheck.explore(body, fs="posix", strategy="pct", schedules=30, seed=0)
    result.raise_on_failure()
    root = racecheck.fakefs.root()
    assert seen["files"] and all(path.startswith(root + "/ckpt/step-1/") for path in seen["files"])
    assert any(path.endswith("/.metadata") for path in seen["files"])
    assert not os.path.exists(root), "nothing under the mount root reached the real disk"
