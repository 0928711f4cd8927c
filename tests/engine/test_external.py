"""Calls that wait on other processes are one traced step, not "uncontrolled blocking".

A child process that takes longer than the watchdog used to end the run as uncontrolled blocking; now the wait is
an "external" step, the run completes, its trace and token replay, and the race between the controlled threads
around it is still found. Uncontrolled threads calling the same functions get the real ones, and everything is
restored afterwards.
"""

import multiprocessing
import os
import subprocess
import sys
import threading

import pytest
import racecheck
from racecheck.control import external
from racecheck.runtime import watchdog

SLOW_CHILD = [sys.executable, "-c", "import time; time.sleep(0.35); print('done')"]


def waits_for_a_slow_child():
    out = subprocess.run(SLOW_CHILD, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "done"


def _fails_after_child():
    waits_for_a_slow_child()
    raise RuntimeError("after the child")


def test_slow_child_is_one_external_step_not_uncontrolled_blocking(monkeypatch):
    result = racecheck.explore(waits_for_a_slow_child, schedules=1, watchdog=0.2)
    assert result.ok, result.failure
    failure = racecheck.explore(_fails_after_child, schedules=1, watchdog=0.2).failure
    assert failure.kind == "exception" and "external subprocess communicate" in failure.trace
    again = racecheck.replay(_fails_after_child, failure.token, watchdog=0.2)
    assert again.failure.trace == failure.trace

    # Without the external step the wait is a thread blocked in C code: it gets the same bound as every other
    # uncontrolled wait (watchdog.hang_bound, 1 s here), not a watchdog (issue 49: one bound for every wait)
    monkeypatch.setattr(external, "TARGETS", [])
    unmarked = racecheck.explore(waits_for_a_slow_child, schedules=1, watchdog=0.2)
    assert unmarked.ok, unmarked.failure


def _child_sends(conn):
    import time

    time.sleep(0.35)
    conn.send("hello")
    conn.close()


def pipe_and_race():
    """A pipe read from a real child process, next to a lost update between two controlled threads."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=_child_sends, args=(child,))
    process.start()
    state = {"n": 0, "got": None}

    def reader():
        state["got"] = parent.recv()

    def bump():
        value = state["n"]
        racecheck.point("between read and write")
        state["n"] = value + 1

    threads = [threading.Thread(target=reader), threading.Thread(target=bump), threading.Thread(target=bump)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    process.join()
    assert state["got"] == "hello"
    assert state["n"] == 2, f"lost update: {state['n']}"


def test_pipe_from_a_child_process_and_the_race_beside_it():
    result = racecheck.explore(pipe_and_race, strategy="pct", schedules=30, seed=0, watchdog=0.2, shrink_budget=5,
                               race_budget=0)
    assert not result.ok and "lost update" in result.failure.message, result.failure
    assert "recv mp.Pipe#1.0" in result.failure.trace  # the child is a process of the run: its pipe is served


def test_uncontrolled_callers_get_the_real_calls_and_everything_is_restored():
    before = (subprocess.Popen.wait, subprocess.Popen.communicate, multiprocessing.connection.wait)
    with external.waiting_outside():
        assert subprocess.Popen.wait is not before[0]
        out = subprocess.run([sys.executable, "-c", "print(3)"], capture_output=True, text=True).stdout
        assert out.strip() == "3"  # this thread is not controlled: a plain call
    assert (subprocess.Popen.wait, subprocess.Popen.communicate, multiprocessing.connection.wait) == before
    assert "recv" not in vars(__import__("socket").socket)


def waits_too_long():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)"], check=True)


def test_a_wait_on_another_process_is_still_bounded(monkeypatch):
    """Waiting outside keeps the baton, so a child that needs a controlled thread would wait forever: past a
    bound (``watchdog.hang_bound``: 5 watchdogs, 0.5 s here) it is reported as a hang that says why (the whole
    story, with cleanup and no leaked thread, is in test_unwind_cleanup.py)."""
    failure = racecheck.explore(waits_too_long, schedules=1, watchdog=0.1).failure
    assert failure is not None and failure.kind == "uncontrolled-blocking" and failure.hang
    assert f"made no scheduling point for {watchdog.hang_bound(0.1):g}s, waiting in 'external subprocess" in (
        failure.message)


fit_roots: list[str] = []


def fit_with_dataloader_workers():
    """A real Trainer.fit whose DataLoader has two worker processes, then a deliberate failure so the run has a
    token and a trace to compare."""
    import tempfile

    import lightning.pytorch as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, index):
            return self.layer(batch[0]).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            data = TensorDataset(torch.arange(32.0).reshape(-1, 4))
            return DataLoader(data, batch_size=2, num_workers=2, multiprocessing_context="fork")

    with tempfile.TemporaryDirectory(prefix="racecheck-fit-") as root:
        fit_roots.append(root)
        trainer = pl.Trainer(default_root_dir=root, max_epochs=1, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, enable_checkpointing=False)
        trainer.fit(Tiny())
    raise RuntimeError("fit finished")


@pytest.mark.slow  # a real Trainer.fit with worker processes, run three times: seconds alone, more when busy
def test_trainer_fit_with_dataloader_workers_is_explored_and_replays():
    """Used to end as "uncontrolled blocking" after 2 s: the workers' results arrive on multiprocessing queues and
    the queue's feeder thread blocked on a real condition. Now the waits are external steps, the feeder is
    plumbing left uncontrolled, forked workers forget the run, and the same token replays the same trace. Since
    processes joined the run (docs/control.md#processes), the workers are children of the run and their queues
    are served by the parent."""
    import lightning.pytorch  # noqa: F401 - imported before the run: a first import is long and makes no point
    import torch.utils.data  # noqa: F401

    fit_roots.clear()
    result = racecheck.explore(fit_with_dataloader_workers, strategy="random", schedules=1, shrink_budget=0,
                               race_budget=0)
    failure = result.failure
    assert failure.kind == "exception" and failure.message == "RuntimeError: fit finished", failure.message
    assert "get mp.Queue#" in failure.trace and "P2.T0 is T" in failure.trace  # the workers are processes of the run
    # race_budget=0 as for the exploration: the replay would otherwise look for the racing pair, rerunning the fit
    again = racecheck.replay(fit_with_dataloader_workers, failure.token, race_budget=0)
    assert again.failure.trace == failure.trace
    # every thread unwound (the workers' results arrived), so the fit's own cleanup ran: nothing left behind
    assert result.leaked_threads == [] and again.leaked_threads == []
    # at least three fits (the failing schedule, the same schedule again with source locations, the replay; with the
    # workers as processes of the run, the replay's not-a-race check runs its probes too), none left behind
    assert len(fit_roots) >= 3 and not any(os.path.exists(root) for root in fit_roots)
