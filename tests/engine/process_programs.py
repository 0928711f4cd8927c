"""Programs that start processes racecheck cannot control (issue 45 item 5), each from a controlled thread."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading

BEFORE: list[subprocess.Popen] = []  # a child started before the exploration, which a program then waits on
GRANDCHILDREN: list[int] = []  # pids of the grandchildren that escaped, for the test to stop


def _in_a_thread(body) -> None:
    worker = threading.Thread(target=body)
    worker.start()
    worker.join()


def shell_child() -> None:
    _in_a_thread(lambda: subprocess.run(["sh", "-c", "exit 0"], check=True))


def system_call() -> None:
    _in_a_thread(lambda: os.system("true"))


def posix_spawn() -> None:
    def spawn() -> None:
        pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
        os.waitpid(pid, 0)

    _in_a_thread(spawn)


def fork_with_threads() -> None:
    def fork() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    _in_a_thread(fork)


def started_before() -> None:
    _in_a_thread(lambda: BEFORE[-1].wait())


def grandchild() -> None:
    def run() -> None:
        with tempfile.TemporaryDirectory() as folder:
            pidfile = os.path.join(folder, "pid")
            subprocess.run(["sh", "-c", f"sleep 30 & echo $! > {pidfile}"], check=True)
            with open(pidfile) as file:
                GRANDCHILDREN.append(int(file.read()))

    _in_a_thread(run)


def always_fails_beside_a_child() -> None:
    """Fails under every schedule; an uncontrolled child ran meanwhile, so whether it is a race is undecided."""
    _in_a_thread(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    raise ValueError("always")


def always_fails() -> None:
    _in_a_thread(lambda: None)
    raise ValueError("always")
