"""DRAFT"""

# ruff: noqa: E701, E702

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple


def _run(*targets: Callable[[], object]) -> None:
    """Start one thread per target, then join them all (C's create-then-join), on one line of this module."""
    threads = [threading.Thread(target=target) for target in targets]
    list(map(threading.Thread.start, threads)), list(map(threading.Thread.join, threads))


# ---------------------------------------------------------------------------------------------------------------
# The Concurrency Software benchmarks (SCTBench's "CS" set)
# ---------------------------------------------------------------------------------------------------------------


def _account(expected: Callable[[SimpleNamespace], int]) -> None:
    m = threading.Lock()
    g = SimpleNamespace(x=1, y=2, z=4, balance=1, deposit_done=False, withdraw_done=False)

    def deposit():
        with m: g.balance = g.balance + g.y; g.deposit_done = True

    def withdraw():
        with m: g.balance = g.balance - g.z; g.withdraw_done = True

    def check_result():
        with m:
            if g.deposit_done and g.withdraw_done: assert g.balance == expected(g), f"balance is {g.balance}"

    checker = threading.Thread(target=check_result)
    checker.start()
    deposit()
    withdraw()
    checker.join()


def account():
    """CS account_bad: a deposit and a withdrawal update a balance under a mutex; a checker looks at the result.

    Once both updates are done the checker asserts ``balance == (x - y) - z``, the wrong formula (the deposit adds
    y); before that it asserts nothing, so the program fails exactly when the checker runs last. Shrunk: C runs
    check_result, deposit and withdraw as three threads; here check_result is a thread, started first as in C,
    and the main thread runs deposit then withdraw (with three locked threads the line-level space is over
    150,000 schedules)."""
    _account(lambda g: (g.x - g.y) - g.z)  # BAD: should be (x + y) - z


def account_ok():
    """CS account_ok: account with the right formula, ``(x + y) - z``."""
    _account(lambda g: (g.x + g.y) - g.z)


def _arithmetic_prog(check: Callable[[int, int], bool]) -> None:
    n = 1
    m = threading.Lock()
    empty = threading.Condition(m)
    full = threading.Condition(m)
    g = SimpleNamespace(num=0, total=0, flag=False)

    def thread1():  # producer
        for _ in range(n):
            with m:
                while g.num > 0: empty.wait()
                g.num += 1; full.notify()

    def thread2():  # consumer: adds its indices 0 .. n-1, then n
        for j in range(n):
            with m:
                while g.num == 0: full.wait()
                g.total = g.total + j; g.num -= 1; empty.notify()
        g.total = g.total + n; g.flag = True

    _run(thread1, thread2)
    if g.flag: assert check(g.total, n * (n + 1) // 2), f"total is {g.total}"


def arithmetic_prog():
    """CS arithmetic_prog_bad: a producer and a consumer hand over N items through a counter, a mutex and two
    condition variables; the consumer sums its loop indices and then N, which always makes N(N+1)/2.

    The program asserts that the total is *not* N(N+1)/2, so it fails in every schedule (the bug is the oracle).
    Shrunk: N 3 -> 1 (N = 2 is over 150,000 schedules). C signals each condition just after unlocking; Python's
    notify needs the lock, so it is the last thing done under it (every wait re-checks its predicate in a loop)."""
    _arithmetic_prog(lambda total, expected: total != expected)  # BAD: it always is


def arithmetic_prog_ok():
    """CS arithmetic_prog_ok: the same program asserting ``total == N(N+1)/2`` (N 4 -> 1)."""
    _arithmetic_prog(lambda total, expected: total == expected)


def _bluetooth(fixed: bool) -> None:
    atomic = threading.Lock()  # ESBMC's __ESBMC_atomic_begin/end
    e = SimpleNamespace(pending_io=1, stopping_flag=False, stopping_event=False)
    g = SimpleNamespace(stopped=False)

    def io_increment():  # BCSP_IoIncrement
        if e.stopping_flag: return -1
        with atomic: e.pending_io = e.pending_io + 1  # BAD: the flag may have been set since it was read
        return 0

    def io_increment_fixed():
        with atomic:
            if e.stopping_flag: return -1
            e.pending_io = e.pending_io + 1
        return 0

    def pnp_stop():  # BCSP_PnpStop
        e.stopping_flag = True
        with atomic: e.pending_io = e.pending_io - 1; pending_io = e.pending_io  # BCSP_IoDecrement
        if pending_io == 0: e.stopping_event = True
        if e.stopping_event: g.stopped = True  # release the device's resources

    def pnp_stop_fixed():
        with atomic: e.stopping_flag = True; e.pending_io = e.pending_io - 1; pending_io = e.pending_io
        if pending_io == 0: e.stopping_event = True
        if e.stopping_event: g.stopped = True

    stopper = threading.Thread(target=pnp_stop_fixed if fixed else pnp_stop)
    stopper.start()
    status = io_increment_fixed() if fixed else io_increment()  # BCSP_PnpAdd
    if status == 0: assert not g.stopped, "the driver works on a stopped device"  # do work here
    stopper.join()


def bluetooth_driver():
    """CS bluetooth_driver_bad: the Windows Bluetooth driver's stop/add race (Qadeer and Wu's KISS example).

    BCSP_IoIncrement reads ``stoppingFlag`` and only then, in a separate atomic section, counts the request: the
    stopping thread can set the flag, drop the count to zero and mark the device stopped in between, and the adder
    then works on a stopped device. The main thread is the adder, as in C. Shrunk: the adder's closing
    BCSP_IoDecrement (after the assertion) is left out, and the stopper's is inlined (it doubles the space
    otherwise, for nothing the assertion can see)."""
    _bluetooth(fixed=False)


def bluetooth_driver_fixed():
    """bluetooth_driver with the flag's check and the increment in one atomic section, and the flag set in the
    stopper's: a request is either refused or keeps the count above zero until it is done."""
    _bluetooth(fixed=True)


def carter01():
    """CS carter01_bad: two classes of operation share a resource lock ``l``, taken by the first member of a
    class in and released by the last one out, the counts guarded by ``m``.

    Deadlock: t1 takes ``l`` and leaves ``m``; t2 takes ``m`` and blocks on ``l`` holding it; t1 then blocks on
    ``m``. Shrunk: C also starts two threads with empty bodies (t3, t4); they take no part and are left out."""
    m = threading.Lock()
    l = threading.Lock()  # noqa: E741 (C's name)
    g = SimpleNamespace(a=0, b=0)

    def t1():
        m.acquire(); g.a += 1
        if g.a == 1: l.acquire()
        m.release()
        # perform class A operation
        m.acquire(); g.a -= 1
        if g.a == 0: l.release()
        m.release()

    def t2():
        m.acquire(); g.b += 1
        if g.b == 1: l.acquire()
        m.release()
        # perform class B operation
        m.acquire(); g.b -= 1
        if g.b == 0: l.release()
        m.release()

    _run(t1, t2)


def _circular_buffer(ok: bool) -> None:
    m = threading.Lock()
    log = []  # the circular log (C's buffer with its first/next indices; never near its bounds here)
    g = SimpleNamespace(send=True, receive=False, value=0)

    def t1_pass(i):  # one pass of t1's loop
        with m:
            if g.send: log.append(i); g.send = False; g.receive = True  # insertLogElement(i)

    def t2_pass(i):  # one pass of t2's loop
        with m:
            if g.receive: assert log.pop(0) == i, "removed another pass's element"; g.receive = False; g.send = True

    def t1_ok_pass(i):
        with m:
            if g.send: log.append(i); g.value = i; g.send = False; g.receive = True

    def t2_ok_pass(_i):
        with m:
            if g.receive: assert log.pop(0) == g.value; g.receive = False; g.send = True

    send, receive = (t1_ok_pass, t2_ok_pass) if ok else (t1_pass, t2_pass)

    def t1():
        send(0)  # for (i = 0; i < N; i++), N = 1

    def t2():
        receive(0); receive(1)  # for (i = 0; i < N; i++), N = 2, unrolled

    _run(t1, t2)


def circular_buffer():
    """CS circular_buffer_bad: a sender and a receiver take turns, by two flags under a mutex, to pass elements
    through a circular log.

    The receiver asserts that it removes the element its own loop index names, but its iterations that find
    nothing to receive are skipped, so the indices drift: the receiver runs an empty iteration, the sender inserts
    0, the receiver's next iteration removes 0 where it expects 1. Shrunk: N 7 -> 2 iterations."""
    _circular_buffer(ok=False)


def circular_buffer_ok():
    """CS circular_buffer_ok: the receiver compares with the value the sender recorded."""
    _circular_buffer(ok=True)


def _deadlock01(fixed: bool) -> None:
    a = threading.Lock()
    b = threading.Lock()
    g = SimpleNamespace(counter=1)

    def thread1():
        with a, b: g.counter += 1

    def thread2():
        with b, a: g.counter -= 1  # BAD: the opposite order to thread1

    def thread2_fixed():
        with a, b: g.counter -= 1

    _run(thread1, thread2_fixed if fixed else thread2)


def deadlock01():
    """CS deadlock01_bad: thread1 locks a then b, thread2 locks b then a: the classic lock-order deadlock."""
    _deadlock01(fixed=False)


def deadlock01_fixed():
    """deadlock01 with both threads locking a before b."""
    _deadlock01(fixed=True)


def _dining(n: int, atomic_count: bool) -> None:
    atomic = threading.Lock()  # ESBMC's __ESBMC_atomic_begin/end
    forks = [threading.Lock() for _ in range(n)]
    g = SimpleNamespace(phil=0)

    def philosopher(left, right):  # din_phil2..4
        with atomic, forks[right], forks[left]: pass  # lock right, lock left, unlock both
        g.phil += 1
        assert g.phil != n, "every philosopher has eaten"

    def philosopher_atomic_count(left, right):  # din_phil5..7
        with atomic, forks[right], forks[left]: pass
        with atomic: g.phil += 1; assert g.phil != n, "every philosopher has eaten"

    body = philosopher_atomic_count if atomic_count else philosopher
    _run(*(functools.partial(body, i, (i + 1) % n) for i in range(n)))


def din_phil2():
    """CS din_phil2_sat: two dining philosophers take both forks inside an atomic section, then count themselves.

    "sat" is ESBMC's word for a reachable assertion: ``assert(0)`` once the count reaches N, which every schedule
    does unless the unprotected ``++phil`` loses an update (then it passes). The atomic section serialises the fork
    protocol, so it cannot deadlock. Each philosopher gets its left and right fork numbers from the main thread
    instead of computing them from its id."""
    _dining(2, atomic_count=False)


def din_phil5():
    """CS din_phil5_sat: as din_phil2, but the count and its check are inside the atomic section too (the form of
    din_phil5..7), so the assertion fails in every schedule. Shrunk: 5 philosophers -> 2."""
    _dining(2, atomic_count=True)


def fsbench():
    """CS fsbench_bad: threads allocate a free block to their inode, under per-inode and per-block locks.

    There is one thread more than there are inode locks, and the last one indexes past the lock array: not a
    race, it fails in every schedule as soon as that thread runs. Shrunk: 26 blocks and 27 threads -> 1 block and
    2 threads; C tries NUMBLOCKS/2 blocks, here (NUMBLOCKS+1)/2 so that one block is still tried."""
    numblocks, numinode = 1, 2
    locki = [threading.Lock() for _ in range(numblocks)]
    lockb = [threading.Lock() for _ in range(numblocks)]
    busy = [0] * numblocks
    inode = [0] * numinode

    def thread_routine(tid):
        i = tid % numinode; assert 0 <= i < numblocks, f"inode {i} has no lock"  # BAD: tid == NUMBLOCKS
        with locki[i]:
            if inode[i] == 0:
                b = (i * 2) % numblocks
                for _ in range((numblocks + 1) // 2):
                    with lockb[b]:
                        if not busy[b]: busy[b] = 1; inode[i] = b + 1; break
                    b = (b + 1) % numblocks

    _run(*(functools.partial(thread_routine, tid) for tid in range(numblocks + 1)))


def lazy01():
    """CS lazy01_bad: two threads add 1 and 2 to ``data`` under a mutex; a third asserts ``data < 3`` under it,
    which fails when it runs after both."""
    m = threading.Lock()
    g = SimpleNamespace(data=0)

    def thread1():
        with m: g.data += 1

    def thread2():
        with m: g.data += 2

    def thread3():
        with m: assert g.data < 3, f"data is {g.data}"  # BAD

    _run(thread1, thread2, thread3)


def _phase01(ok: bool) -> None:
    x = threading.Lock()
    y = threading.Lock()

    def thread1():
        x.acquire(); x.release(); x.acquire()  # BAD: x stays locked; the other thread waits for it forever
        y.acquire(); y.release(); y.acquire(); y.release()

    def thread1_ok():
        x.acquire(); x.release(); x.acquire(); x.release()
        y.acquire(); y.release(); y.acquire(); y.release()

    body = thread1_ok if ok else thread1
    _run(body, body)


def phase01():
    """CS phase01_bad: two threads run a body that locks x a second time and never unlocks it: the second thread
    to get there waits forever, in every schedule."""
    _phase01(ok=False)


def phase01_ok():
    """CS phase01_ok: x is unlocked again."""
    _phase01(ok=True)


def _queue(ok: bool) -> None:
    m = threading.Lock()
    queue = []  # C's array queue (head, tail, amount; never near its bounds here)
    stored_elements = []
    g = SimpleNamespace(enqueue_flag=True, dequeue_flag=False)

    def t1():
        value = 0
        with m: queue.append(value); stored_elements.append(value); assert queue  # enqueue 0; !empty
        with m:  # the one pass of ``for (i = 0; i < SIZE - 1; i++)``
            if g.enqueue_flag:
                value += 1
                queue.append(value); stored_elements.append(value); g.enqueue_flag = False; g.dequeue_flag = True

    def t2_pass(i):  # one pass of ``for (i = 0; i < SIZE; i++)``
        with m:
            if g.dequeue_flag:
                assert queue.pop(0) == stored_elements[i], "dequeued another pass's element"  # BAD
                g.dequeue_flag = False; g.enqueue_flag = True

    def t1_ok():
        with m:
            if g.enqueue_flag:
                for value in (1, 2): queue.append(value); stored_elements.append(value)
                g.enqueue_flag = False; g.dequeue_flag = True

    def t2_ok():
        with m:
            if g.dequeue_flag:
                for i in (0, 1):
                    if queue: assert queue.pop(0) == stored_elements[i]
                g.dequeue_flag = False; g.enqueue_flag = True

    def t2():
        t2_pass(0); t2_pass(1)  # for (i = 0; i < SIZE; i++), unrolled

    assert not queue  # main's assert(empty(&queue) == EMPTY)
    if ok: _run(t1_ok, t2_ok)
    else: _run(t1, t2)


def queue_bug():
    """CS queue_bad: an enqueuer and a dequeuer take turns through two flags under a mutex.

    The dequeuer compares each element with ``stored_elements[i]`` for its own loop index i, but its iterations
    that find the flag down are skipped, so i runs ahead of the queue: an empty first iteration, then element 0
    compared with stored_elements[1]. Shrunk: SIZE 20 -> 2 (the element array keeps one spare slot for C's
    ``tail == SIZE`` wrap-around)."""
    _queue(ok=False)


def queue_ok():
    """CS queue_ok: each side does all its work in one critical section (SIZE 40 -> 2)."""
    _queue(ok=True)


reorder_a = 0
reorder_b = 0


def _reorder_set():
    global reorder_a, reorder_b
    reorder_a = 1; reorder_b = -1


def _reorder_check():
    assert (reorder_a == 0 and reorder_b == 0) or (reorder_a == 1 and reorder_b == -1), "saw half an update"


def reorder_3():
    """CS reorder_3_bad: set threads write ``a = 1; b = -1``; a check thread asserts it sees both writes or
    neither, and fails between them. Two set threads and one check thread, as in C, and the shared variables are
    module globals as in C (reset on entry). reorder_4/5/10/20 are the same with 3/4/9 set threads (and 10 check
    threads for reorder_20), left out."""
    global reorder_a, reorder_b
    reorder_a = 0
    reorder_b = 0
    _run(_reorder_set, _reorder_set, _reorder_check)


def _stack(ok: bool) -> None:
    m = threading.Lock()
    arr = []  # C's array with its top index
    g = SimpleNamespace(flag=False)

    def t1_pass(i):  # one pass of t1's loop: push(arr, i)
        with m: arr.append(i); g.flag = True

    def t2_pass():  # one pass of t2's loop
        with m:
            if g.flag: assert arr, "pop() underflow"; arr.pop()  # BAD: the flag outlives the pushes

    def t1_ok_pass(i):
        with m: arr.append(i)

    def t2_ok_pass():
        with m:
            if arr: arr.pop()

    push, pop = (t1_ok_pass, t2_ok_pass) if ok else (t1_pass, t2_pass)

    def t1():
        push(0); push(1)  # for (i = 0; i < SIZE; i++), unrolled

    def t2():
        pop(); pop()  # for (i = 0; i < SIZE; i++), unrolled

    _run(t1, t2)


def stack():
    """CS stack_bad: a pusher and a popper share a stack under a mutex; the popper pops whenever ``flag`` says
    something was once pushed.

    The flag is never cleared, so a popper that runs two iterations after the first push pops an empty stack.
    Shrunk: SIZE 10 -> 2; C's one-line helpers (get_top, inc_top, dec_top) are inlined."""
    _stack(ok=False)


def stack_ok():
    """CS stack_ok: the popper checks ``top > 0`` under the mutex instead of the flag."""
    _stack(ok=True)


def sync01():
    """CS sync01_bad: thread1 waits on ``empty`` until ``num`` is 0, but num starts at 1 and thread2's decrement
    is commented out in C: thread1 waits forever in every schedule (a signal sent before it waits is lost, one sent
    after wakes it to find num still 1)."""
    m = threading.Lock()
    empty = threading.Condition(m)
    full = threading.Condition(m)
    g = SimpleNamespace(num=1)

    def thread1():
        with m:
            while g.num > 0: empty.wait()  # BAD: deadlock
            g.num += 1; full.notify()

    def thread2():
        with m:
            while g.num == 0: full.wait()
            empty.notify()  # C's "num--" is commented out

    _run(thread1, thread2)


def sync02():
    """CS sync02_bad: producer/consumer rounds, but ``num`` starts at 2, not 0: the consumer takes an item that
    was already there and finishes, and the producer waits forever for room, in every schedule. Shrunk: N 2 -> 1
    round each (N = 2 is 89,000 schedules, 100 seconds, all of them deadlocks)."""
    m = threading.Lock()
    empty = threading.Condition(m)
    full = threading.Condition(m)
    g = SimpleNamespace(num=2)

    def producer():
        for _ in range(1):
            with m:
                while g.num > 0: empty.wait()  # BAD: nobody makes room
                g.num += 1; full.notify()

    def consumer():
        for _ in range(1):
            with m:
                while g.num == 0: full.wait()
                g.num -= 1; empty.notify()

    _run(producer, consumer)


def token_ring():
    """CS token_ring_bad: three threads pass a token round a ring, each in an atomic section (t1: x1 = (x3+1) % 4,
    t2: x2 = x1, t3: x3 = x2); t4 asserts, once all three flags are set, that x1 == x2 == x3.

    That holds only when t1 goes first: t2, t3, t1 leaves x1 = 2, x2 = x3 = 1. Shrunk: C runs four threads; here
    t1 is a thread, the main thread runs t2 then t3, and t4's check runs after the join (C's t4 checks only once
    every flag is set, so its other runs check nothing)."""
    atomic = threading.Lock()  # ESBMC's __ESBMC_atomic_begin/end
    g = SimpleNamespace(x1=1, x2=2, x3=1, flag1=False, flag2=False, flag3=False)

    def t1():
        with atomic: g.x1 = (g.x3 + 1) % 4; g.flag1 = True

    def t2():
        with atomic: g.x2 = g.x1; g.flag2 = True

    def t3():
        with atomic: g.x3 = g.x2; g.flag3 = True

    def t4():
        with atomic:
            if g.flag1 and g.flag2 and g.flag3: assert g.x1 == g.x2 == g.x3, f"ring {g.x1}, {g.x2}, {g.x3}"  # BAD

    first = threading.Thread(target=t1)
    first.start()
    t2()
    t3()
    first.join()
    t4()


def _twostage(fixed: bool) -> None:
    data1_lock = threading.Lock()
    data2_lock = threading.Lock()
    g = SimpleNamespace(data1=0, data2=0)

    def func_a():
        with data1_lock: g.data1 = 1
        with data2_lock: g.data2 = g.data1 + 1  # BAD: data1 was visible without data2

    def func_b():
        with data1_lock:
            if g.data1 == 0: return
            t1 = g.data1
        with data2_lock: t2 = g.data2
        assert t2 == t1 + 1, f"read data1 = {t1} but data2 = {t2}"

    def func_a_fixed():
        with data1_lock, data2_lock: g.data1 = 1; g.data2 = g.data1 + 1

    def func_b_fixed():
        with data1_lock, data2_lock:
            if g.data1 == 0: return
            t1 = g.data1; t2 = g.data2
        assert t2 == t1 + 1, f"read data1 = {t1} but data2 = {t2}"

    if fixed: _run(func_a_fixed, func_b_fixed)
    else: _run(func_a, func_b)


def twostage():
    """CS twostage_bad: funcA sets data1 under one lock, then data2 = data1 + 1 under another; funcB reads data1,
    then data2, and asserts data2 == data1 + 1. A reader between funcA's two stages fails. twostage_100 is the
    same with 99 funcA threads, left out."""
    _twostage(fixed=False)


def twostage_fixed():
    """twostage with both stages, and both reads, under both locks (taken in the same order on both sides)."""
    _twostage(fixed=True)


def _wronglock(fixed: bool) -> None:
    data_lock = threading.Lock()
    this_lock = threading.Lock()
    g = SimpleNamespace(data_value=0)

    def func_a():
        with data_lock:
            x = g.data_value; g.data_value += 1
            assert g.data_value == x + 1, "data_value moved under the lock"  # BAD

    def func_b():
        with data_lock if fixed else this_lock: g.data_value += 1  # BAD (unless fixed): the wrong lock

    _run(func_a, func_b)


def wronglock():
    """CS wronglock_bad: funcA increments a counter under dataLock and checks its own increment; funcB increments
    it under another lock, thisLock, so it can slip in between. Shrunk: 1 funcA and 7 funcB threads -> 1 and 1
    (wronglock_3, with 3 funcB threads, is then the same program, left out)."""
    _wronglock(fixed=False)


def wronglock_fixed():
    """wronglock with funcB taking dataLock."""
    _wronglock(fixed=True)


# ---------------------------------------------------------------------------------------------------------------
# conc-bugs (Jie Yu's collection of real bugs): StringBuffer, pbzip2, Aget
# ---------------------------------------------------------------------------------------------------------------


class _StringBuffer:
    """Just enough of JDK 1.4's ``java.lang.StringBuffer`` (as SCTBench's C++ port has it): every method holds the
    buffer's own lock."""

    def __init__(self, text: str = ""):
        self.lock = threading.Lock()
        self.value = list(text)
        self.count = len(text)

    def length(self):
        with self.lock: return self.count

    def get_chars(self, begin, end, dst):  # copies value[begin:end] to the end of dst
        with self.lock: assert 0 <= begin <= end <= self.count, "index out of bounds"; dst.extend(self.value[begin:end])

    def append(self, sb):
        with self.lock: n = sb.length(); sb.get_chars(0, n, self.value); self.count += n  # BAD: not atomic on sb

    def append_fixed(self, sb):
        with self.lock, sb.lock: n = sb.count; self.value.extend(sb.value[:n]); self.count += n

    def append_str(self, text):
        with self.lock: self.value.extend(text); self.count += len(text)

    def erase(self, start, end):
        with self.lock: end = min(end, self.count); del self.value[start:end]; self.count -= end - start


def _stringbuffer(fixed: bool) -> None:
    buffer = _StringBuffer("abc")
    sb = _StringBuffer()
    append = sb.append_fixed if fixed else sb.append

    def thread_main():
        buffer.erase(0, 3); buffer.append_str("abc")

    worker = threading.Thread(target=thread_main)
    worker.start()
    append(buffer)
    worker.join()


def stringbuffer_jdk14():
    """conc-bugs stringbuffer-jdk1.4: JDK 1.4's ``StringBuffer.append(StringBuffer sb)`` (Flanagan and Qadeer's
    atomicity violation).

    append reads ``sb.length()`` and then copies that many characters with ``sb.getChars``, each under sb's lock
    but not together: a worker's ``erase(0, 3)`` in between makes getChars fail its bounds check (Java's
    StringIndexOutOfBoundsException, the C++ port's assert). It takes two preemptions, as the worker's
    ``append("abc")`` must not yet have restored the length. The main thread appends, as in C++."""
    _stringbuffer(fixed=False)


def stringbuffer_jdk14_fixed():
    """stringbuffer_jdk14 with append holding sb's lock across the length and the copy (later JDKs' fix)."""
    _stringbuffer(fixed=True)


def _pbzip2(fixed: bool) -> None:
    mut = threading.Lock()
    fifo = SimpleNamespace(mut=mut, not_empty=threading.Condition(mut), blocks=["block"], empty=False)
    g = SimpleNamespace(all_done=True)  # the producer has queued its one block and set allDone
    written = threading.Event()  # the output thread has written every block

    def consumer():
        while True:
            fifo.mut.acquire()
            while fifo.empty:
                if g.all_done: fifo.mut.release(); return  # BAD: main may have deleted the mutex by now
                fifo.not_empty.wait()
            fifo.blocks.pop(0); fifo.empty = not fifo.blocks; fifo.mut.release()
            written.set()  # compressed, handed to the output thread, written

    worker = threading.Thread(target=consumer)
    worker.start()
    written.wait()  # pthread_join(output)
    if fixed: worker.join()
    fifo.empty = True; fifo.mut = None  # queueDelete(fifo): the mutex destroyed and freed
    worker.join()


def pbzip2():
    """conc-bugs pbzip2-0.9.4: an order violation. main waits for the output thread but not for the consumer
    threads, then deletes the work queue and its mutex; a consumer still on its way out locks or unlocks the freed
    mutex (a segfault in C, an AttributeError on the deleted mutex here).

    Shrunk: one consumer, one block; the output thread is reduced to the event main waits on ("every block
    written"), set by the consumer once it has handed its block over; the producer broadcasts ``allDone``. The
    final join is Python's (C's process just exits); the deletion still comes before it."""
    _pbzip2(fixed=False)


def pbzip2_fixed():
    """pbzip2 with main joining the consumer before it deletes the queue (what later pbzip2 versions do)."""
    _pbzip2(fixed=True)


def aget_bug2():
    """conc-bugs aget-bug2: Aget's SIGINT handler ``save_log`` copies every download thread's progress, then the
    shared total ``bwritten``, while a download thread adds to its own offset and then, under a mutex, to the
    total: the two copies can disagree, and the saved log resumes the download at the wrong place.

    The handler runs on the main thread, during the download; the oracle (the copies agree) is the one the bug
    report states. Shrunk: one download thread writing one chunk."""
    bwritten_mutex = threading.Lock()
    g = SimpleNamespace(bwritten=0)
    wthread = [SimpleNamespace(offset=0)]

    def http_get():
        td, dw = wthread[0], 100  # dw: bytes written this round
        td.offset += dw
        with bwritten_mutex: g.bwritten += dw

    def save_log():
        saved = sum(td.offset for td in wthread)  # memcpy(&(h.wthread), wthread, ...)
        h_bwritten = g.bwritten
        assert saved == h_bwritten, f"log says {saved} bytes by thread, {h_bwritten} in all"  # BAD

    downloader = threading.Thread(target=http_get)
    downloader.start()
    save_log()  # ctrl-c
    downloader.join()


# ---------------------------------------------------------------------------------------------------------------
# CHESS's managed test programs (SCTBench's chess-m folder)
# ---------------------------------------------------------------------------------------------------------------


def _chess_balance(fixed: bool) -> None:
    lock = threading.Lock()
    account = SimpleNamespace(balance=10)

    def read():
        with lock: return account.balance

    def withdraw(n):
        r = read()
        with lock: account.balance = r - n  # BAD: r may be stale by now

    def withdraw_fixed(n):
        with lock: account.balance = account.balance - n

    def deposit(n):
        with lock: account.balance = account.balance + n

    child = threading.Thread(target=withdraw_fixed if fixed else withdraw, args=(10,))
    child.start()
    deposit(10)
    child.join()
    balance = read()
    assert balance == 10, f"balance is {balance}"


def chess_balance():
    """CHESS balance.cs: withdraw reads the balance under the account's lock and writes ``r - n`` under it again
    later, so a deposit in between is lost. The main thread deposits, as in C#."""
    _chess_balance(fixed=False)


def chess_balance_fixed():
    """chess_balance with withdraw reading and writing in one critical section."""
    _chess_balance(fixed=True)


chess_x = 0


def _chess_race_child():
    global chess_x
    chess_x = chess_x - 2


def chess_race():
    """CHESS race.cs: ``x = x - 2`` on a child thread races ``x = x + 1`` on the main thread (a static field in
    C#, a module global here, reset on entry); ``x == 9`` fails when either update is lost."""
    global chess_x
    chess_x = 10
    child = threading.Thread(target=_chess_race_child)
    child.start()
    chess_x = chess_x + 1
    child.join()
    assert chess_x == 9, f"x is {chess_x}"


preempt_x = 0
preempt_a = 0


def _preempt_child():
    global preempt_x, preempt_a
    preempt_x = 1
    preempt_a = 1


def chess_preempt1():
    """CHESS preempt1.cs: a child writes x = 1 and then a = 1 (CHESS's PreemptionDisable covers the first write
    alone); the main thread reads x, then a, and asserts it never sees x written without a. Module globals, as
    C#'s static fields (reset on entry)."""
    global preempt_x, preempt_a
    preempt_x = 0
    preempt_a = 0
    child = threading.Thread(target=_preempt_child)
    child.start()
    read_x = preempt_x
    read_a = preempt_a
    child.join()
    assert not (read_x == 1 and read_a == 0), "saw x written but not a"


def chess_preempt4():
    """CHESS preempt4.cs: preempt1 with both of the child's writes in one preemption-free region. A Python thread
    cannot switch preemption off, so the region is a lock, and the main thread reads under it too."""
    global preempt_x, preempt_a
    preempt_x = 0
    preempt_a = 0
    region = threading.Lock()

    def child():
        with region: _preempt_child()

    worker = threading.Thread(target=child)
    worker.start()
    with region: read_x = preempt_x; read_a = preempt_a
    worker.join()
    assert not (read_x == 1 and read_a == 0), "saw x written but not a"


def chess_monitor_pulse_wait():
    """CHESS monitor_pulse_wait.cs (MSDN's Monitor.Pulse/Wait sample): the first thread waits for a pulse before
    each enqueue; the second pulses once, then dequeues for as long as its one-second waits are answered.

    If the second thread runs first, its pulse finds nobody waiting, its wait times out and it leaves; the first
    thread then waits forever. Shrunk: MAX_LOOP_TIME 1000 -> 1. The timed wait runs in racecheck's virtual time."""
    cond = threading.Condition()
    queue = []

    def first_thread():
        with cond:
            for counter in range(1):
                cond.wait()  # BAD: the pulse may have come and gone
                queue.append(counter); cond.notify()

    def second_thread():
        with cond:
            cond.notify()
            while cond.wait(1.0): queue.pop(0); cond.notify()

    _run(first_thread, second_thread)


def chess_deadlock():
    """CHESS deadlock.cs: the main thread (Parent) locks lock1 then lock2, a child locks lock2 then lock1."""
    lock1 = threading.Lock()
    lock2 = threading.Lock()
    g = SimpleNamespace(x=0)

    def child():
        with lock2, lock1: g.x += 1

    worker = threading.Thread(target=child)
    worker.start()
    with lock1, lock2: g.x += 1  # Parent()
    worker.join()


# ---------------------------------------------------------------------------------------------------------------
# Inspect's examples and SPLASH-2
# ---------------------------------------------------------------------------------------------------------------


def race01():
    """Inspect race01.c: two threads run ``data++`` with no lock. The C program has no assertion (Inspect reports
    the data race itself); the oracle here is the lost update it allows: ``data == 2``."""
    g = SimpleNamespace(data=0)

    def thread_routine():
        g.data += 1

    _run(thread_routine, thread_routine)
    assert g.data == 2, f"data is {g.data}"


def dpor_example3():
    """Inspect dpor-example3.c: t1 ``a++``, t2 ``b++``, t3 ``b--; a += 5``, no locks. No assertion in C (Inspect
    looks for the races); the oracle here is that no update is lost: ``a == 6 and b == 0``."""
    g = SimpleNamespace(a=0, b=0)

    def thread1():
        g.a += 1

    def thread2():
        g.b += 1

    def thread3():
        g.b -= 1; g.a += 5

    _run(thread1, thread2, thread3)
    assert g.a == 6 and g.b == 0, f"a = {g.a}, b = {g.b}"


def fft():
    """SPLASH-2 fft as SCTBench has it: P workers (the main thread is worker 0) take an id under a lock, meet at
    a barrier twice around the transform and count themselves finished with an unprotected ``numFinished++``;
    main asserts ``numFinished == P`` after the joins, which a lost update breaks (SCTBench's lu and barnes end
    the same way). Shrunk: P = 2; the transform itself and the timing are left out."""
    p = 2
    idlock = threading.Lock()
    start = threading.Barrier(p)
    g = SimpleNamespace(id=0, num_finished=0)

    def slave_start():
        with idlock: g.id += 1
        start.wait()
        # TouchArray, the forward and the inverse FFT
        start.wait()
        g.num_finished += 1  # BAD: no lock

    slave = threading.Thread(target=slave_start)
    slave.start()
    slave_start()
    slave.join()
    assert g.num_finished == p, f"numFinished is {g.num_finished}"


# ---------------------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------------------


class Program(NamedTuple):
    name: str
    fn: Callable[[], None]
    buggy: bool
    bug: str  # "assertion", "exception" or "deadlock"; "" for a correct twin
    description: str


def failure_kind(result: Any) -> str:
    """The kind of a ``racecheck.explore`` result's failure in the registry's words: "assertion", "exception",
    "deadlock", or racecheck's own; "" when it passed."""
    failure = result.failure
    if failure is None:
        return ""
    if failure.kind == "exception":
        return "assertion" if isinstance(failure.exception, AssertionError) else "exception"
    return failure.kind


def _p(fn: Callable[[], None], bug: str) -> Program:
    first_paragraph = (fn.__doc__ or "").strip().split("\n\n")[0]
    return Program(fn.__name__, fn, bool(bug), bug, " ".join(first_paragraph.split()))


PROGRAMS: list[Program] = [
    _p(account, "assertion"),
    _p(account_ok, ""),
    _p(arithmetic_prog, "assertion"),
    _p(arithmetic_prog_ok, ""),
    _p(bluetooth_driver, "assertion"),
    _p(bluetooth_driver_fixed, ""),
    _p(carter01, "deadlock"),
    _p(circular_buffer, "assertion"),
    _p(circular_buffer_ok, ""),
    _p(deadlock01, "deadlock"),
    _p(deadlock01_fixed, ""),
    _p(din_phil2, "assertion"),
    _p(din_phil5, "assertion"),
    _p(fsbench, "assertion"),
    _p(lazy01, "assertion"),
    _p(phase01, "deadlock"),
    _p(phase01_ok, ""),
    _p(queue_bug, "assertion"),
    _p(queue_ok, ""),
    _p(reorder_3, "assertion"),
    _p(stack, "assertion"),
    _p(stack_ok, ""),
    _p(sync01, "deadlock"),
    _p(sync02, "deadlock"),
    _p(token_ring, "assertion"),
    _p(twostage, "assertion"),
    _p(twostage_fixed, ""),
    _p(wronglock, "assertion"),
    _p(wronglock_fixed, ""),
    _p(stringbuffer_jdk14, "assertion"),
    _p(stringbuffer_jdk14_fixed, ""),
    _p(pbzip2, "exception"),
    _p(pbzip2_fixed, ""),
    _p(aget_bug2, "assertion"),
    _p(chess_balance, "assertion"),
    _p(chess_balance_fixed, ""),
    _p(chess_race, "assertion"),
    _p(chess_preempt1, "assertion"),
    _p(chess_preempt4, ""),
    _p(chess_monitor_pulse_wait, "deadlock"),
    _p(chess_deadlock, "deadlock"),
    _p(race01, "assertion"),
    _p(dpor_example3, "assertion"),
    _p(fft, "assertion"),
]
