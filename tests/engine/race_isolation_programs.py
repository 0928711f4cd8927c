"""Programs whose racing pair is known: a lazy initialisation, and one where the latest conflicting pair is not the
one that decides the failure. racecheck watches this module's memory (it defines the test functions)."""

import threading


def _run_all(*targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Lazy:
    """Check-then-act: two first calls of ``get`` may both find no value and both build one."""

    def __init__(self):
        self._value = None
        self.built = []

    def get(self):
        if self._value is None:
            value = {"timeout": 5}
            self.built.append(value)
            self._value = value
        return self._value


def lazy_init():
    lazy = Lazy()
    _run_all(lazy.get, lazy.get)
    assert len(lazy.built) == 1, f"built {len(lazy.built)} times"


def reader_sees_x():
    """The reader must not see ``x`` set. The writer sets ``y`` then ``x``; the reader looks at ``x`` then ``y``.
    Only the order of the writer's ``x`` and the reader's ``x`` decides the failure; ``y`` is set and looked at
    too, last of all, so the latest conflicting pair is on ``y``. Putting the reader's ``y`` before the writer's
    ``y`` also puts the reader's ``x`` before the writer's ``x`` (each thread's steps keep their order), and that
    second pair is what makes the failure go away."""
    x, y = threading.Event(), threading.Event()
    seen = []

    def writer():
        y.set()
        x.set()

    def reader():
        seen.append((x.is_set(), y.is_set()))

    _run_all(writer, reader)
    assert not seen[0][0], f"the reader saw x set: {seen}"
