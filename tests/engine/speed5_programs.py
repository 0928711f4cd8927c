"""Programs whose objects die inside a run with memory watched (``racecheck.control.memory_names``: a name does not
keep its object alive), for ``test_speed5_weak_names.py``."""

from __future__ import annotations

import threading


class Note:
    """Appends to ``log`` when it dies: a finalizer that touches memory the program watches."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def __del__(self) -> None:
        self.log.append("gone")


def finalizer_inside_the_run() -> None:
    """A worker drops an object it touched: uncontrolled, its finalizer runs there, before the worker goes on."""
    log: list[str] = []

    def worker() -> None:
        note = Note(log)
        note.log.append("made")  # the object is touched, so named
        del note
        log.append("after")

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert log == ["made", "gone", "after"], log


class Box:
    def __init__(self) -> None:
        self.value = 0
