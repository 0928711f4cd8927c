"""Programs whose controlled thread waits on something racecheck does not control (issue 49 item 2): a socket
nobody writes, an uncontrolled child that does not end, a real lock held across a scheduling point. The tests close
what they left open (``OPEN``) so no thread outlives them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

OPEN: list = []  # the peers of the waits, closed by the test afterwards so the stuck threads return
CHILDREN: list = []  # the Popen objects of the children started


def socket_nobody_writes() -> None:
    ours, theirs = socket.socketpair()
    OPEN.extend((theirs, ours))  # closed last first: our end, so the reader sees EOF, then its own
    reader = threading.Thread(target=theirs.recv, args=(1,))
    reader.start()
    reader.join()


PIPES: list[int] = []  # the pipes nobody writes, closed by the test (write end first) so the readers see EOF


def pipe_nobody_writes() -> None:
    read_end, write_end = os.pipe()
    PIPES.extend((read_end, write_end))
    reader = threading.Thread(target=os.read, args=(read_end, 1))
    reader.start()
    reader.join()


def child_that_does_not_end() -> None:
    def wait() -> None:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100)"])
        CHILDREN.append(child)
        child.wait()

    waiter = threading.Thread(target=wait)
    waiter.start()
    waiter.join()


REAL_LOCK = threading.Lock()  # made at import, before any exploration: a real lock


def real_lock_across_a_point() -> None:
    def holder() -> None:
        with REAL_LOCK:
            time.sleep(0.01)  # a scheduling point while the real lock is held

    threads = [threading.Thread(target=holder) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def close_all() -> None:
    """Give every stuck thread its way out: EOF on the sockets, the children killed."""
    while OPEN:
        OPEN.pop().close()
    while PIPES:
        os.close(PIPES.pop())
        time.sleep(0.05)  # the reader returns from its read before its end is closed
    while CHILDREN:
        child = CHILDREN.pop()
        if child.poll() is None:
            child.kill()
        child.wait()
