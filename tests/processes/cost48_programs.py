"""Programs for the cut of issue 48 item 6 (``child_memory.private``): a child's one thread of the run makes its plain
memory accesses without points. Each child here does plain work on its own memory while other processes can run;
the races are between two threads of one child (one of them ended, never joined, when the other reads) and between
two processes on a served value. Module-level functions only, so spawn children could import them."""

import mmap
import multiprocessing
import threading

CHILDS = {"n": 0}  # only children change it: each its own copy (fork), from 0
PARENTS = {"n": 0}  # only the parent changes it


def busy(store, rounds):
    """Plain work on the process's own memory: each access a point where the process has two threads of the run."""
    for _ in range(rounds):
        store["n"] += 1
    return store["n"]


def lone_worker(reports):
    reports.put(busy(CHILDS, 4))


def lone_workers():
    """Two single-threaded children and the parent, each busy on its own memory, then a report each: no race."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    children = [ctx.Process(target=lone_worker, args=(reports,)) for _ in range(2)]
    for child in children:
        child.start()
    busy(PARENTS, 2)
    got = sorted(reports.get() for _ in children)
    for child in children:
        child.join()
    assert got == [4, 4], got


def unjoined(reports):
    box = {"v": 0}
    started = threading.Event()

    def write():
        started.set()
        box["v"] = 1

    writer = threading.Thread(target=write)
    writer.start()
    started.wait()  # the writer has begun; it may or may not have written, or ended
    busy(CHILDS, 2)
    reports.put(box["v"])  # read without a join: a data race with the writer's write, whichever comes first
    writer.join()


def unjoined_lines():
    """The lines of ``unjoined``'s write and read (for the data race's report)."""
    import inspect
    source, first = inspect.getsourcelines(unjoined)
    return [first + at for at, line in enumerate(source) if 'box["v"] = 1' in line or "put(box" in line]


def read_before_join():
    """A child's thread reads what another of its threads writes, before joining it: the read can come first."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    child = ctx.Process(target=unjoined, args=(reports,))
    child.start()
    busy(PARENTS, 3)  # the parent can run meanwhile: the child's threads never run alone in the run
    seen = reports.get()
    child.join()
    assert seen == 1, f"read before the write: {seen}"


def bump(total, locked):
    busy(CHILDS, 3)
    if locked:
        with total.get_lock():
            total.value += 1
    else:
        total.value += 1  # a get and a set, each a point on the served value
    busy(CHILDS, 2)


def shared_total(locked=False):
    """Two single-threaded children add one each to a served ``Value``: a lost update across processes, unless
    locked."""
    ctx = multiprocessing.get_context("fork")
    total = ctx.Value("i", 0)
    children = [ctx.Process(target=bump, args=(total, locked)) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    assert total.value == 2, f"lost update across processes: {total.value}"


def shared_total_locked():
    shared_total(locked=True)


def half_write(reports, mapped):
    reports.put("writing")
    mapped[0] = 1  # half done: another process mapping the same pages can see it
    mapped[0] = 2


def torn_mapping():
    """A child writes a shared anonymous ``mmap`` twice; the parent, which maps the same pages, can read between."""
    ctx = multiprocessing.get_context("fork")
    reports = ctx.Queue()
    mapped = mmap.mmap(-1, 1)
    child = ctx.Process(target=half_write, args=(reports, mapped))
    child.start()
    reports.get()
    seen = mapped[0]
    child.join()
    assert seen != 1, "read the child's half-done write"
