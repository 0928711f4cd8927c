"""Classic concurrency bugs written with plain threading / queue / concurrent.futures, each with its fix.

Nothing here knows about racecheck except ``racecheck.point`` where a real program would have a delay
(an I/O call, a slow computation) between a read and a write. racecheck instruments this module (it defines the
test functions), so the plain ``threading``/``queue``/``concurrent.futures`` names below come under control.
"""

import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import racecheck


def _run_all(*targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# 1. lost update on a shared counter -------------------------------------------------------------------------


def lost_update():
    state = {"count": 0}

    def increment():
        value = state["count"]
        racecheck.point("between read and write")
        state["count"] = value + 1

    _run_all(increment, increment)
    assert state["count"] == 2, f"lost update: count is {state['count']}"


def lost_update_fixed():
    state = {"count": 0}
    lock = threading.Lock()

    def increment():
        with lock:
            value = state["count"]
            racecheck.point("between read and write")
            state["count"] = value + 1

    _run_all(increment, increment)
    assert state["count"] == 2


# 2. check-then-act on a queue ---------------------------------------------------------------------------------


def check_then_act():
    jobs = queue.Queue()
    jobs.put("only job")
    taken = []

    def consumer():
        if not jobs.empty():
            taken.append(jobs.get_nowait())  # raises queue.Empty if the other consumer got there first

    _run_all(consumer, consumer)
    assert taken == ["only job"]


def check_then_act_fixed():
    jobs = queue.Queue()
    jobs.put("only job")
    taken = []

    def consumer():
        try:
            taken.append(jobs.get_nowait())
        except queue.Empty:
            pass

    _run_all(consumer, consumer)
    assert taken == ["only job"]


# 3. lock-order deadlock -----------------------------------------------------------------------------------------


def lock_order_deadlock():
    a, b = threading.Lock(), threading.Lock()

    def first():
        with a:
            with b:
                pass

    def second():
        with b:
            with a:
                pass

    _run_all(first, second)


def lock_order_fixed():
    a, b = threading.Lock(), threading.Lock()

    def first():
        with a:
            with b:
                pass

    def second():
        with a:
            with b:
                pass

    _run_all(first, second)


# 4. missed wake-up on a Condition ---------------------------------------------------------------------------------


def missed_wakeup():
    cond = threading.Condition()
    state = {"ready": False}

    def consumer():
        if not state["ready"]:  # checked outside the lock: the notify can land before the wait
            with cond:
                cond.wait()

    def producer():
        state["ready"] = True
        with cond:
            cond.notify()

    _run_all(consumer, producer)


def missed_wakeup_fixed():
    cond = threading.Condition()
    state = {"ready": False}

    def consumer():
        with cond:
            while not state["ready"]:
                cond.wait()

    def producer():
        with cond:
            state["ready"] = True
            cond.notify()

    _run_all(consumer, producer)


# 5. an executor job racing with shutdown ----------------------------------------------------------------------------


def submit_races_shutdown():
    executor = ThreadPoolExecutor(max_workers=1)
    done = []

    def producer():
        executor.submit(done.append, "job")  # RuntimeError if shutdown already happened

    t = threading.Thread(target=producer)
    t.start()
    executor.shutdown(wait=True)
    t.join()
    assert done == ["job"]


def submit_races_shutdown_fixed():
    executor = ThreadPoolExecutor(max_workers=1)
    done = []

    def producer():
        executor.submit(done.append, "job")

    t = threading.Thread(target=producer)
    t.start()
    t.join()  # all producers finish before the pool shuts down
    executor.shutdown(wait=True)
    assert done == ["job"]


# 6. order violation between two futures -----------------------------------------------------------------------------


def futures_order_violation():
    config = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        loaded = pool.submit(config.update, {"lr": 0.1})
        used = pool.submit(lambda: config["lr"] * 2)  # assumes the first job already ran
        loaded.result()
        assert used.result() == 0.2


def futures_order_fixed():
    config = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        loaded = pool.submit(config.update, {"lr": 0.1})
        used = pool.submit(lambda: loaded.result() or config["lr"] * 2)
        assert used.result() == 0.2


# name -> (buggy, fixed, preemptions the bug needs at least)
BUGS = {
    "lost_update": (lost_update, lost_update_fixed, 1),
    "check_then_act": (check_then_act, check_then_act_fixed, 1),
    "lock_order_deadlock": (lock_order_deadlock, lock_order_fixed, 1),
    "missed_wakeup": (missed_wakeup, missed_wakeup_fixed, 1),
    "submit_races_shutdown": (submit_races_shutdown, submit_races_shutdown_fixed, 0),
    "futures_order_violation": (futures_order_violation, futures_order_fixed, 1),
}

# Public, for other test modules whose programs start and join their threads the same way (appended at the end:
# the line numbers of the programs above show in traces and the fingerprint).
run_all = _run_all
