"""A keep-last-k checkpoint manager over ``torch.save`` (issue 49): a background thread saves each checkpoint while
the training thread removes the oldest one, which may still be being written. Under Windows semantics the remove
of a file open for writing fails (WinError 32); under POSIX the removed file is written anyway and leaks. Either
way a race, found while torch's C++ writer is in the middle of a save: the replays that shrink it and name its
racing pair unwind the saving thread inside that writer."""

from __future__ import annotations

import os
import tempfile
import threading

import torch


class KeepLast:
    """Saves in the background, keeps the ``k`` newest checkpoints of ``folder``."""

    def __init__(self, folder: str, k: int = 1) -> None:
        self.folder = folder
        self.k = k
        self.saved: list[str] = []
        self.savers: list[threading.Thread] = []

    def save(self, step: int) -> None:
        path = os.path.join(self.folder, f"step{step}.ckpt")
        saver = threading.Thread(target=torch.save, args=({"w": torch.zeros(4), "step": step}, path))
        saver.start()
        self.savers.append(saver)
        self.saved.append(path)
        while len(self.saved) > self.k:
            old = self.saved.pop(0)
            if os.path.exists(old):
                os.remove(old)

    def wait(self) -> None:
        for saver in self.savers:
            saver.join()


def keep_last() -> None:
    """Two saves, keeping one: only the second may remain."""
    folder = _folder()
    manager = KeepLast(folder)
    manager.save(1)
    manager.save(2)
    manager.wait()
    left = sorted(os.listdir(folder))
    assert left == ["step2.ckpt"], left


def _folder() -> str:
    """The fake filesystem's root in a run with ``fs=``; else a fresh real temporary folder."""
    from racecheck.fakefs.mount import run_store

    store = run_store()
    return store.root if store is not None else tempfile.mkdtemp(prefix="keep-last-")
