"""The gate's reference workload: a fixed engine-only program whose throughput is measured in the same run as the
scenarios, so the gate compares ratios (scenario / reference) and not raw speeds that depend on the machine.

It exercises what every scenario pays for: thread start and join, lock handoffs, a queue between threads, explicit
points. It has no bug: every schedule passes.
"""

from __future__ import annotations

import queue
import threading


def workload() -> None:
    lock = threading.Lock()
    items: queue.Queue = queue.Queue()
    total = [0]

    def producer(base: int) -> None:
        for i in range(3):
            with lock:
                total[0] += base + i
            items.put(base + i)

    def consumer() -> None:
        for _ in range(6):
            items.get()

    threads = [threading.Thread(target=producer, args=(b,)) for b in (0, 10)]
    threads.append(threading.Thread(target=consumer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert total[0] == 0 + 1 + 2 + 10 + 11 + 12
