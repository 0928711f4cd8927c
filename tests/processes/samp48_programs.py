"""A program for ``test_samp48_no_sampling_with_processes.py``: ``sampled_programs.lazy_race``'s private work and
lazy value, with a child process of the run started beside the threads (fork: no interpreter start)."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))

import sampled_programs  # noqa: E402


def _child() -> None:
    sampled_programs.work(5)


def lazy_race_beside_a_child() -> None:
    sampled_programs._note()
    lazy = sampled_programs.Lazy()
    child = multiprocessing.get_context("fork").Process(target=_child)
    child.start()

    def worker() -> None:
        sampled_programs.work()
        lazy.get()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    child.join()
    assert lazy.made == 1, f"made {lazy.made} values"
