"""A thread stopped with its run, whose cleanup is stopped too (a ``with`` block's exit makes a point, which raises
``Abort`` again), keeps its frames for the life of the process: what it left half done is never finalized
(``runtime.records.unwind``); objects of threads that never ran into their cleanup are finalized as before."""

import gc
import threading
import weakref

import racecheck

REFS: list = []  # a weak reference to each marker made, in the runs
DEAD: list = []  # those whose marker was finalized: a C-level callback (no code of the run runs at a finalization)


class Marker:
    pass


def _program():
    lock = threading.Lock()
    box = {"n": 0}

    def worker():
        marker = Marker()
        REFS.append(weakref.ref(marker, DEAD.append))
        with lock:  # unwound in here, the release is a point too: the cleanup is cut short
            box["n"] += 1
            box["n"] += 1
        del marker

    thread = threading.Thread(target=worker)
    thread.start()
    assert box["n"] != 1, "the main thread saw the worker half way"
    thread.join()


def test_a_thread_whose_cleanup_was_cut_short_is_never_finalized():
    REFS.clear()
    DEAD.clear()
    result = racecheck.explore(_program, strategy="pct", schedules=60, seed=0, shrink_budget=0, race_budget=0,
                               max_failures=5)
    assert result.failure is not None
    del result
    gc.collect()
    assert len(DEAD) < len(REFS), f"all {len(REFS)} markers were finalized, those of threads stopped in cleanup too"
    assert DEAD, "no marker was finalized at all"
