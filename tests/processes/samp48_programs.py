"""A program for ``test_samp48_no_sampling_with_processes.py``: ``sampled_programs.lazy_race`` (private work, a
lazy value two threads take) with a child process of the run started beside it (fork: no interpreter start)."""

from __future__ import annotations

import multiprocessing
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))

import sampled_programs  # noqa: E402


def _child() -> None:
    sampled_programs.work(5)


def lazy_race_beside_a_child() -> None:
    child = multiprocessing.get_context("fork").Process(target=_child)
    child.start()
    try:
        sampled_programs.lazy_race()
    finally:
        child.join()
