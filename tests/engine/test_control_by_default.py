"""Control by default (issue 29): every thread, lock, queue, future, executor, sleep and clock call of a controlled
thread is controlled with no module named, however the name was bound; threads the exploration does not control
keep the real objects; everything is put back afterwards, pass or fail.

The programs here are the cases a new user ran into: a worker that imports ``time`` inside its function and spins
on ``time.sleep(0)``, a module first imported during the exploration, a real background thread working beside an
exploration, and a real lock from before the exploration that a controlled thread blocks on.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import importlib
import queue
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import racecheck
from racecheck.control import autocontrol, sync_facades

# ----- a yielding spin lock whose worker imports time inside the function ----------------------------------------


def spin_lock_program():
    """Two workers take a spin lock twice each; the lock is correct (test and set with no point between), and a
    waiter yields with ``time.sleep(0)``, imported inside the function: with a real sleep the waiter never lets
    the holder run, and the run ends in a step limit or uncontrolled blocking."""
    state = {"locked": False, "count": 0}

    def worker():
        import time

        for _ in range(2):
            while state["locked"]:
                time.sleep(0)
            state["locked"] = True
            value = state["count"]
            racecheck.point("inside the critical section")
            state["count"] = value + 1
            state["locked"] = False

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["count"] == 4


@pytest.mark.parametrize("strategy", ["random", "pct", "dfs"])
def test_a_spin_lock_on_a_sleep_imported_inside_the_function_is_controlled(strategy):
    # memory=False: the test and set of the flag are atomic only while memory is not watched (watched, racecheck
    # finds the lost update this spin lock has in real Python, test_memory_finds_the_spin_locks_own_race)
    result = racecheck.explore(spin_lock_program, strategy=strategy, schedules=200, seed=1, memory=False)
    result.raise_on_failure()
    assert result.exhausted  # a small space: every strategy gets through it, none ends in a step limit


def test_memory_finds_the_spin_locks_own_race():
    result = racecheck.explore(spin_lock_program, strategy="pct", schedules=200, seed=1)
    assert not result.ok and "locked" in result.failure.trace


def test_the_sleep_imported_inside_the_function_is_the_virtual_one():
    seen = {}

    def body():
        import time as inner
        from time import sleep

        seen["sleep"] = inner.sleep is sync_facades.clock.sleep and sleep is sync_facades.clock.sleep
        before = inner.monotonic()
        inner.sleep(3600)  # an hour of virtual time: instant
        seen["slept"] = inner.monotonic() - before

    started = time.perf_counter()
    racecheck.explore(body, schedules=1).raise_on_failure()
    assert time.perf_counter() - started < 60
    assert seen == {"sleep": True, "slept": 3600.0}


def test_every_family_imported_inside_a_function_is_controlled():
    seen = {}

    def body():
        import queue as q
        import threading as th
        from concurrent.futures import wait
        from concurrent.futures._base import Future
        from concurrent.futures.thread import ThreadPoolExecutor
        from threading import Condition, Event, get_ident

        with ThreadPoolExecutor(max_workers=1) as pool:
            done = pool.submit(q.Queue().put, 1)
            wait([done])
        seen["objects"] = [type(x).__module__ for x in (th.Lock(), th.RLock(), Condition(), Event(), th.Semaphore(),
                                                        th.Barrier(1), q.SimpleQueue(), Future(), pool, done)]
        seen["ident"] = get_ident()

    racecheck.explore(body, schedules=1).raise_on_failure()
    assert all(module.startswith("racecheck.sync") for module in seen["objects"]), seen
    assert seen["ident"] == 0x5A5A0000  # T0's logical ident, the same in every process


# ----- a module first imported during the exploration ---------------------------------------------------------------

LAZY = '''
import threading
import time
from time import sleep

CREATED_AT_IMPORT = threading.Lock()  # module state: made while the module is imported, it must stay real


class Ticket(threading.Event):  # a subclass of a stdlib class, made while the facade is what `threading` reads
    pass


TICKET = Ticket()
counter = {"n": 0}


def bump():
    value = counter["n"]
    sleep(0.001)  # the window of the lost update: a point only if this sleep is the virtual one
    counter["n"] = value + 1
'''


@pytest.fixture
def lazy_module(tmp_path, monkeypatch):
    name = f"racecheck_lazy_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(LAZY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def lost_update_in(name):
    def body():
        module = importlib.import_module(name)  # first imported by the first schedule's controlled thread
        module.counter["n"] = 0
        threads = [threading.Thread(target=module.bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if module.counter["n"] != 2:  # not a bare assert: pytest rewrites it here, not in the other process
            raise AssertionError("lost update")

    return body


def test_a_module_first_imported_during_the_exploration_is_controlled(lazy_module):
    assert lazy_module not in sys.modules
    result = racecheck.explore(lost_update_in(lazy_module), strategy="pct", schedules=100, seed=0)
    assert not result.ok and "lost update" in result.failure.message
    module = sys.modules[lazy_module]
    # what its import made is real, and afterwards its globals are the real objects again
    assert type(module.CREATED_AT_IMPORT) is type(threading.Lock())
    assert type(module.TICKET).__mro__[1] is threading.Event
    assert module.threading is threading and module.time is time and module.sleep is time.sleep
    # the schedule replays the same trace now that the module is loaded (the import made no point)
    again = racecheck.replay(lost_update_in(lazy_module), result.failure.token)
    assert again.failure.trace == result.failure.trace


def test_the_replay_in_a_process_where_the_module_is_not_loaded_gives_the_same_trace(lazy_module, tmp_path):
    result = racecheck.explore(lost_update_in(lazy_module), strategy="pct", schedules=100, seed=0)
    assert not result.ok
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
        import racecheck
        from test_control_by_default import lost_update_in
        assert {lazy_module!r} not in sys.modules
        again = racecheck.replay(lost_update_in({lazy_module!r}), {result.failure.token!r})
        sys.stdout.write(again.failure.trace)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == result.failure.trace


# ----- threads the exploration does not control ---------------------------------------------------------------------


def lost_update():
    state = {"n": 0}

    def inc():
        value = state["n"]
        time.sleep(0)
        state["n"] = value + 1

    threads = [threading.Thread(target=inc) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["n"] == 2, "lost update"


class Background(threading.Thread):
    """A real thread started before the exploration (as pytest's, execnet's or torch's are): it answers requests
    through this module's globals, which control by default swaps, and must get the real objects every time."""

    def __init__(self):
        super().__init__(daemon=True)
        self.requests = queue.SimpleQueue()
        self.answers = queue.SimpleQueue()

    def run(self):
        while True:
            request = self.requests.get()
            if request is None:
                return
            import time as inner  # imported inside the function by a thread that is not controlled

            lock, event, work = threading.Lock(), threading.Event(), queue.Queue()
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                done = pool.submit(work.put, 1)
                concurrent.futures.wait([done])
            inner.sleep(0.001)
            self.answers.put({
                "during": autocontrol.installed(),
                "types": (type(lock), type(event), type(work), type(pool), type(done)),
                "real time": abs(inner.time() - request) < 3600,
            })


def test_a_real_background_thread_keeps_real_objects_while_a_test_is_explored():
    background = Background()
    background.start()
    answers = []

    def ask(progress):
        background.requests.put(time.time())  # not a controlled thread: real time, real queues
        answers.append(background.answers.get(timeout=30))

    try:
        result = racecheck.explore(lost_update, strategy="pct", schedules=50, seed=0, progress=ask,
                                   max_failures=2)
    finally:
        background.requests.put(None)
        background.join(30)
    assert not result.ok and "lost update" in result.failure.message  # the exploration works as ever
    assert answers and all(answer["during"] for answer in answers)
    real = (type(threading.Lock()), threading.Event, queue.Queue, concurrent.futures.ThreadPoolExecutor,
            concurrent.futures.Future)
    assert all(answer["types"] == real and answer["real time"] for answer in answers), answers[0]


gate = threading.Lock()  # made before any exploration: a real lock, as racecheck finds it


def blocked_on_a_lock_from_before():
    def holder():
        gate.acquire()
        gate.release()

    t = threading.Thread(target=holder)
    t.start()
    t.join()


def test_a_controlled_thread_blocked_on_an_object_from_before_is_reported_with_its_location():
    gate.acquire()
    try:
        result = racecheck.explore(blocked_on_a_lock_from_before, schedules=1, watchdog=0.5)
    finally:
        gate.release()  # the thread left behind ends on its own now: wait for it, so no later test sees it
        for thread in threading.enumerate():
            if thread.name.endswith("(holder)"):
                thread.join(30)
    failure = result.failure
    assert failure.kind == "uncontrolled-blocking"
    assert "test_control_by_default.py" in failure.message and "holder" in failure.message
    assert "an object made before the exploration" in failure.message


# ----- restored afterwards, pass or fail ----------------------------------------------------------------------------


def _originals():
    here = sys.modules[__name__].__dict__
    return (builtins.__import__, builtins.open, importlib.import_module, here["threading"], here["time"],
            here["queue"], concurrent.futures.ThreadPoolExecutor)


@pytest.mark.parametrize("outcome", ["pass", "fail", "error"])
def test_everything_is_put_back_after_an_exploration(outcome):
    before = _originals()
    assert before[3] is sys.modules["threading"] and before[4] is sys.modules["time"]

    def body():
        import queue as inner

        inner.Queue().put(1)
        assert outcome != "fail"

    def interrupt(progress):
        raise KeyboardInterrupt  # the user's ^C between two schedules: the exploration itself ends with it

    if outcome == "error":
        with pytest.raises(KeyboardInterrupt):
            racecheck.explore(body, schedules=3, progress=interrupt)
    else:
        assert racecheck.explore(body, schedules=3).ok == (outcome == "pass")
    assert _originals() == before
    assert not autocontrol.installed()


def test_exclude_keeps_a_module_real(lazy_module):
    module = importlib.import_module(lazy_module)
    seen = {}

    def body():
        seen["sleep"] = module.sleep
        seen["threading"] = module.threading

    racecheck.explore(body, schedules=1, exclude=[lazy_module])
    assert seen == {"sleep": time.sleep, "threading": threading}
    racecheck.explore(body, schedules=1)
    assert seen["sleep"] is sync_facades.clock.sleep and seen["threading"] is sync_facades.threading_facade
