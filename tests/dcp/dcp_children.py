"""Small children for the DCP tests' engine checks (no torch): a daemon left running, one told to stop, and a
spawned child that talks over a served Pipe (DCP's daemon does). Module-level functions, for spawn."""

import multiprocessing


def _serve(conn):
    """DCP's daemon loop in small: answer requests until told to stop."""
    conn.send("ready")
    while True:
        request = conn.recv()
        if request == "stop":
            return
        conn.send(request * 2)


def _daemon(method, stop):
    ctx = multiprocessing.get_context(method)
    here, there = ctx.Pipe()
    daemon = ctx.Process(target=_serve, args=(there,), daemon=True)
    daemon.start()
    there.close()
    assert here.recv() == "ready"
    here.send(21)
    assert here.recv() == 42
    if stop:
        here.send("stop")
        daemon.join()
        assert daemon.exitcode == 0


def daemon_left():
    """The test ends with its daemon waiting for the next request: leaked."""
    _daemon("fork", stop=False)


def daemon_stopped():
    """The daemon told to stop and joined: clean."""
    _daemon("fork", stop=True)


def daemon_stopped_spawn():
    """The same with a spawned daemon: its Pipe end is a handle that holds only its id."""
    _daemon("spawn", stop=True)
