"""A process of the run's ``sentinel`` as the program sees it: the real file descriptor, named after its process.

Why: a sentinel is the number the OS gave the parent's end of a pipe, the lowest free descriptor, so it follows what
the interpreter opened and has not yet closed (a previous schedule's ends close when their ``Popen`` is collected).
Programs key dicts on it (``torch.multiprocessing``'s ``ProcessContext.sentinels``, popped as each rank ends), and
memory watching names an item by its key: ``dict#3[6]`` in one schedule, ``dict#3[9]`` in its rerun, so the same
schedule's trace differed with the process's history (``check_determinism``, a token's trace in a fresh process).
An ``int`` subclass keeps every use of the number (``os.read``, selectors, hashing, equality with the plain int)
and gives the key a name of the run's own (``P1.sentinel``), the same in any process.
"""

from __future__ import annotations

from typing import Any

__racecheck_engine__ = True


class Sentinel(int):
    """The descriptor's number, with the label of its process as its repr."""

    def __new__(cls, fd: int, label: str) -> Sentinel:
        self = super().__new__(cls, fd)
        self.label = label
        return self

    def __repr__(self) -> str:
        return f"{self.label}.sentinel"

    def __reduce__(self) -> Any:
        return int, (int(self),)  # handed to another process, it is a plain number there


def name(process: Any, label: str) -> None:
    """Give the started ``process``'s sentinel (``multiprocessing.Process._sentinel``) its run's name."""
    fd = process.__dict__.get("_sentinel")
    if type(fd) is int:
        process._sentinel = Sentinel(fd, label)
