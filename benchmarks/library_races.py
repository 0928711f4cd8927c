"""Eight known thread races in seven released, pure-Python libraries: a reach benchmark for racecheck and frontrun.

Each race is a *scenario*: a class whose constructor builds the library's shared object the way its documentation
says to use it (frontrun's ``setup``), whose ``work(i)`` is what thread ``i`` does (frontrun's ``workers``) and
whose ``problem()`` names the broken invariant, or returns None (frontrun's ``invariant``). The test functions
below (``sendgrid_request_headers`` ...) take no argument, build the scenario, run its workers on plain
``threading.Thread``s, join them and ``assert`` the invariant: no ``racecheck.point()``, no sleeps, nothing of
racecheck's inside, so a tool finds these races from the memory and file accesses alone.

Six races are on shared attributes and dicts ("memory"), two on a file the library keeps its state in ("file").
No network: where a library would send a request, the transport it calls is replaced for the scenario by a stub
that returns a canned response (``_patched``), and the code path that races is left as released. The file cases
take their directory from ``workdir()``: under racecheck's fake filesystem a folder under its mount root, else a
fresh temporary directory on the real disk, removed afterwards.

``CASES`` lists them: name, ``library==version``, test function, kind, the race and where it is in the released
source (file:line), why it matters, the library's modules (for line-level points and frontrun's
``trace_packages``). Run this file under frontrun's launcher to explore one case with frontrun and print one JSON
line (``benchmarks/bench_libraries.py`` does that in a subprocess)::

    frontrun python benchmarks/library_races.py --frontrun CASE --strategy dpor|random --schedules N
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import pybreaker
import python_http_client
import sendgrid
import socketio
import urllib3
from keyrings.alt.file import PlaintextKeyring
from pydispatch import dispatcher
from tinydb import TinyDB

VERSIONS = {
    "sendgrid": "6.12.5",
    "python-http-client": "3.3.7",
    "python-socketio": "5.16.3",
    "pybreaker": "1.4.1",
    "urllib3": "2.5.0",
    "PyDispatcher": "2.0.7",
    "tinydb": "4.8.2",
    "keyrings.alt": "5.0.2",
    "keyring": "25.7.0",  # keyrings.alt's base classes; not declared by keyrings.alt 5.0.2
}


# --- helpers (not part of any scenario's racing path) ----------------------------------------------------------


def workdir(name: str) -> str:
    """A directory for a file case: under racecheck's mount root inside a run with a fake filesystem, else a fresh
    temporary directory on the real disk (the caller removes it with ``release_workdir``)."""
    store = None
    try:
        from racecheck.fakefs import root, run_store

        store = run_store()
    except ImportError:  # racecheck not installed: the real disk
        pass
    if store is not None:
        path = root() + "/library_races/" + name
        os.makedirs(path, exist_ok=True)
        return path
    return tempfile.mkdtemp(prefix=f"library-races-{name}-")


def release_workdir(path: str) -> None:
    """Remove a real temporary directory made by ``workdir`` (a fake one goes with its store)."""
    if path.startswith(tempfile.gettempdir()):
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _patched(owner: Any, name: str, replacement: Any):
    """``owner.name = replacement`` for the duration: the network transport of a scenario, nothing that races."""
    original = owner.__dict__[name]
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def run_in_threads(scenario: Any, count: int = 2) -> None:
    """Run ``scenario.work(i)`` for i < count on ``count`` threads, join them, assert ``scenario.problem()`` is None."""
    threads = [threading.Thread(target=scenario.work, args=(i,), name=f"worker-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    problem = scenario.problem()
    assert problem is None, problem


# --- 1. sendgrid / python-http-client: one client's request_headers shared by every request --------------------


class _CannedHTTPResponse:
    """What urllib's opener would return: 202 with a JSON body echoing the On-Behalf-Of header the request carried."""

    def __init__(self, request: Any) -> None:
        self._body = json.dumps({"on_behalf_of": request.get_header("On-behalf-of")}).encode()

    def getcode(self) -> int:
        return 202

    def read(self) -> bytes:
        return self._body

    def info(self) -> dict:
        return {"Content-Type": "application/json"}


def _echo_transport(self: Any, opener: Any, request: Any, timeout: Any = None) -> _CannedHTTPResponse:
    """Stands in for ``Client._make_request`` (``opener.open(request)``, the network call)."""
    return _CannedHTTPResponse(request)


class SendgridHeaders:
    """One ``SendGridAPIClient`` reused by two worker threads (sendgrid's documented singleton pattern), each sending
    mail on behalf of its own subuser through the per-call ``request_headers`` of python-http-client."""

    def __init__(self) -> None:
        self.sg = sendgrid.SendGridAPIClient(api_key="SG.test-key")
        self.sent_as = [None, None]

    def work(self, i: int) -> None:
        message = {"personalizations": [{"to": [{"email": f"user{i}@example.com"}]}],
                   "from": {"email": "noreply@example.com"}, "subject": "hi",
                   "content": [{"type": "text/plain", "value": "hello"}]}
        response = self.sg.client.mail.send.post(request_body=message,
                                                 request_headers={"On-Behalf-Of": f"subuser-{i}"})
        self.sent_as[i] = response.to_dict["on_behalf_of"]

    def problem(self) -> str | None:
        wanted = ["subuser-0", "subuser-1"]
        if self.sent_as != wanted:
            return f"requests went out on behalf of {self.sent_as}, expected {wanted}: one request carried the " \
                   "other thread's On-Behalf-Of header (shared request_headers dict)"
        return None


def sendgrid_request_headers() -> None:
    with _patched(python_http_client.Client, "_make_request", _echo_transport):
        run_in_threads(SendgridHeaders())


# --- 2./3. python-socketio: the in-memory Manager's rooms dict under async_mode='threading' --------------------


class _Outbox:
    """Stands in for the Engine.IO transport (``eio.send``/``eio.send_packet``): what the server sent, per client."""

    def __init__(self, eio_sids: list[str]) -> None:
        self.sent: dict[str, list] = {eio_sid: [] for eio_sid in eio_sids}

    def send(self, eio_sid: str, data: Any) -> None:
        self.sent[eio_sid].append(data)

    def send_packet(self, eio_sid: str, pkt: Any) -> None:
        self.sent[eio_sid].append(pkt.data)


def _threading_server(eio_sids: list[str]) -> tuple[socketio.Server, _Outbox]:
    # async_handlers=False: a client's handlers run on the thread that received its message (in threading mode
    # each client's connection has its own thread), not on a further background thread
    sio = socketio.Server(async_mode="threading", async_handlers=False)
    outbox = _Outbox(eio_sids)
    sio.eio.send = outbox.send
    sio.eio.send_packet = outbox.send_packet
    for eio_sid in eio_sids:  # the Engine.IO handshakes, done before the race
        sio._handle_eio_connect(eio_sid, {"REMOTE_ADDR": "127.0.0.1"})
    return sio, outbox


class SocketioConnect:
    """Two clients connect to the ``/chat`` namespace at the same time, each on its own connection thread; it is the
    first connection to that namespace, so ``Manager.connect`` creates ``rooms['/chat']``."""

    EIO = ["eio-a", "eio-b"]

    def __init__(self) -> None:
        self.sio, self.outbox = _threading_server(self.EIO)
        self.sio.on("connect", lambda sid, environ: None, namespace="/chat")

    def work(self, i: int) -> None:
        self.sio._handle_eio_message(self.EIO[i], "0/chat,")  # the CONNECT packet for /chat

    def problem(self) -> str | None:
        manager = self.sio.manager
        lost = []
        for eio_sid in self.EIO:
            sid = manager.sid_from_eio_sid(eio_sid, "/chat")
            if sid is None or not manager.is_connected(sid, "/chat"):
                lost.append(eio_sid)
        if lost:
            return f"client(s) {lost} were sent CONNECT but are not registered in /chat: both threads saw " \
                   "'/chat' not in manager.rooms and the second replaced the first one's dict"
        return None


def socketio_connect_namespace() -> None:
    run_in_threads(SocketioConnect())


class SocketioJoinRoom:
    """Two connected clients send a ``join`` event at the same time; the handler calls ``sio.enter_room(sid, 'lobby')``
    and the room does not exist yet."""

    EIO = ["eio-a", "eio-b"]

    def __init__(self) -> None:
        self.sio, self.outbox = _threading_server(self.EIO)
        self.sio.on("join", lambda sid, room: self.sio.enter_room(sid, room))
        for eio_sid in self.EIO:
            self.sio._handle_eio_message(eio_sid, "0")  # both connected to '/', before the race
        self.sids = [self.sio.manager.sid_from_eio_sid(eio_sid, "/") for eio_sid in self.EIO]

    def work(self, i: int) -> None:
        self.sio._handle_eio_message(self.EIO[i], '2["join","lobby"]')  # EVENT join("lobby")

    def problem(self) -> str | None:
        members = {sid for sid, _ in self.sio.manager.get_participants("/", "lobby")}
        missing = [sid for sid in self.sids if sid not in members]
        if missing:
            return f"{len(missing)} of 2 clients missing from room 'lobby' after both joined: both threads saw " \
                   "'lobby' not in rooms['/'] and the second replaced the first one's bidict"
        return None


def socketio_enter_room() -> None:
    run_in_threads(SocketioJoinRoom())


# --- 4. pybreaker: the failure counter outside the breaker's lock in `with breaker.calling():` -----------------


class _BackendDown(Exception):
    pass


class PybreakerCalling:
    """A ``CircuitBreaker(fail_max=2)`` guarding a backend; two request threads call it through the documented
    context manager ``with breaker.calling():`` and both calls fail: the breaker must then be open."""

    def __init__(self) -> None:
        self.breaker = pybreaker.CircuitBreaker(fail_max=2, name="backend")

    def work(self, i: int) -> None:
        try:
            with self.breaker.calling():
                raise _BackendDown(f"request {i}: backend down")
        except (_BackendDown, pybreaker.CircuitBreakerError):
            pass

    def problem(self) -> str | None:
        state, failures = self.breaker.current_state, self.breaker.fail_counter
        if state != pybreaker.STATE_OPEN:
            return f"2 failures with fail_max=2 left the breaker {state!r} with fail_counter={failures}: a " \
                   "failure was lost in CircuitMemoryStorage.increment_counter (_fail_counter += 1, unlocked)"
        return None


def pybreaker_calling_counter() -> None:
    run_in_threads(PybreakerCalling())


# --- 5. urllib3: HTTPConnectionPool.num_connections ------------------------------------------------------------


def _canned_make_request(self: Any, conn: Any, method: str, url: str, **kwargs: Any) -> urllib3.HTTPResponse:
    """Stands in for ``HTTPConnectionPool._make_request`` (sends the request on ``conn``, reads the response)."""
    return urllib3.HTTPResponse(body=b'{"ok": true}', status=200, headers={"Content-Type": "application/json"},
                                preload_content=True)


class Urllib3ConnectionCount:
    """One ``HTTPConnectionPool(maxsize=2)`` (urllib3's thread-safe pool) shared by two threads that each make a
    request: with the pool empty, each opens a connection, and ``num_connections`` must count both."""

    def __init__(self) -> None:
        self.pool = urllib3.HTTPConnectionPool("api.example.invalid", 80, maxsize=2)

    def work(self, i: int) -> None:
        response = self.pool.request("GET", f"/items/{i}")
        assert response.status == 200

    def problem(self) -> str | None:
        opened = []
        while True:
            try:
                conn = self.pool.pool.get(block=False)
            except Exception:  # queue.Empty
                break
            if conn is not None:
                opened.append(conn)
        if self.pool.num_connections != len(opened):
            return f"the pool holds {len(opened)} connections it opened but num_connections is " \
                   f"{self.pool.num_connections}: an increment was lost in _new_conn (num_connections += 1)"
        return None


def urllib3_num_connections() -> None:
    with _patched(urllib3.HTTPConnectionPool, "_make_request", _canned_make_request):
        run_in_threads(Urllib3ConnectionCount())


# --- 6. PyDispatcher: the module-global connections table ------------------------------------------------------


class _PriceFeed:
    """A sender object."""


class PydispatcherConnect:
    """Two plugins connect their receivers to the same ``(sender, signal)`` pair from two threads (e.g. plugins
    initialised in parallel); afterwards ``dispatcher.send`` must reach both."""

    SIGNAL = "price-changed"

    def __init__(self) -> None:
        self.sender = _PriceFeed()
        self.receivers = [self._receiver(i) for i in range(2)]

    @staticmethod
    def _receiver(i: int) -> Callable[..., str]:
        def on_price(**_: Any) -> str:
            return f"plugin-{i}"

        return on_price

    def work(self, i: int) -> None:
        dispatcher.connect(self.receivers[i], signal=self.SIGNAL, sender=self.sender)

    def problem(self) -> str | None:
        try:
            answers = sorted(answer for _, answer in dispatcher.send(signal=self.SIGNAL, sender=self.sender))
        finally:
            for receiver in self.receivers:  # leave the module-global tables as they were
                with contextlib.suppress(Exception):
                    dispatcher.disconnect(receiver, signal=self.SIGNAL, sender=self.sender)
        if answers != ["plugin-0", "plugin-1"]:
            return f"send() reached {answers} of 2 connected receivers: both connect() calls saw the sender (or " \
                   "signal) missing from dispatcher.connections and the second replaced the first one's entry"
        return None


def pydispatcher_connect() -> None:
    run_in_threads(PydispatcherConnect())


# --- 7. tinydb: the JSON file read-modify-written by every insert ----------------------------------------------


class TinydbInsert:
    """Two worker threads each open the same TinyDB JSON file (``TinyDB(path)``, the default ``JSONStorage``) and
    insert one document; afterwards the file must hold both."""

    def __init__(self) -> None:
        self.dir = workdir("tinydb")
        self.path = os.path.join(self.dir, "db.json")
        TinyDB(self.path).close()  # the (empty) database exists before the race

    def work(self, i: int) -> None:
        with TinyDB(self.path) as db:
            db.insert({"worker": i})

    def problem(self) -> str | None:
        try:
            with TinyDB(self.path) as db:
                workers = sorted(doc["worker"] for doc in db.all())
        except ValueError as exc:  # json.JSONDecodeError
            return f"db.json is no longer valid JSON after both inserted ({exc}): the two writes through " \
                   "separate handles interleaved (seek(0), write, truncate) and left a mix of both"
        finally:
            release_workdir(self.dir)
        if workers != [0, 1]:
            return f"db.json holds documents of workers {workers} after both inserted: each insert read the file, " \
                   "then wrote it back whole, and the later write dropped the other's document"
        return None


def tinydb_lost_insert() -> None:
    run_in_threads(TinydbInsert())


# --- 8. keyrings.alt: the INI keyring file read-modify-written by set_password ---------------------------------


class KeyringSetPassword:
    """One ``PlaintextKeyring`` (file ``keyring_pass.cfg``), two threads each storing the password of a different
    service; afterwards both must be readable."""

    def __init__(self) -> None:
        self.dir = workdir("keyring")
        self.keyring = PlaintextKeyring()
        self.keyring.file_path = os.path.join(self.dir, "keyring_pass.cfg")  # overridable per instance

    def work(self, i: int) -> None:
        self.keyring.set_password(f"service-{i}", "alice", f"secret-{i}")

    def problem(self) -> str | None:
        try:
            got = [self.keyring.get_password(f"service-{i}", "alice") for i in range(2)]
        finally:
            release_workdir(self.dir)
        if got != ["secret-0", "secret-1"]:
            return f"get_password returned {got} after both set_password calls: each read keyring_pass.cfg, " \
                   "added its section and rewrote the file, and the later write dropped the other's password"
        return None


def keyring_lost_password() -> None:
    run_in_threads(KeyringSetPassword())


# --- the registry ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    library: str  # "name==version" of the library whose code races
    fn: Callable[[], None]  # the zero-argument test function
    kind: str  # "memory" or "file"
    race: str  # one line: the race, with file:line in the released version
    impact: str  # one line: why it matters
    scenario: type  # setup / work(i) / problem(): the same scenario for frontrun
    modules: tuple[str, ...]  # the library's modules: line points (racecheck) and trace_packages (frontrun)
    stub: Callable[[], Any] | None = None  # context manager factory for the transport stub, if any
    threads: int = 2


def _stub(owner: Any, name: str, replacement: Any) -> Callable[[], Any]:
    return lambda: _patched(owner, name, replacement)


CASES: list[Case] = [
    Case("sendgrid_request_headers", "python-http-client==3.3.7 (sendgrid==6.12.5)", sendgrid_request_headers,
         "memory",
         "Client._build_client passes the same request_headers dict to every chained child client "
         "(python_http_client/client.py:157) and http_request merges per-call headers into it with "
         "self.request_headers.update() (client.py:145 via :243) before building the urllib Request (:260)",
         "a shared SendGridAPIClient (sendgrid's documented singleton) can send one thread's mail with the other "
         "thread's On-Behalf-Of/Authorization header: mail sent as the wrong subuser",
         SendgridHeaders, ("python_http_client.*", "sendgrid.*"),
         _stub(python_http_client.Client, "_make_request", _echo_transport)),
    Case("socketio_connect_namespace", "python-socketio==5.16.3", socketio_connect_namespace, "memory",
         "BaseManager.basic_enter_room checks `namespace not in self.rooms` and then assigns "
         "self.rooms[namespace] = {} (socketio/base_manager.py:115-116), called by Manager.connect (:55) for "
         "each client connecting; no lock under async_mode='threading'",
         "two clients connecting to a fresh namespace at once: one is told it is connected but is not in "
         "manager.rooms, so it never receives broadcasts and its events are dropped as 'not connected'",
         SocketioConnect, ("socketio.*",)),
    Case("socketio_enter_room", "python-socketio==5.16.3", socketio_enter_room, "memory",
         "BaseManager.basic_enter_room checks `room not in self.rooms[namespace]` and then assigns "
         "self.rooms[namespace][room] = bidict() (socketio/base_manager.py:117-118), reached from "
         "Server.enter_room (server.py:286); no lock under async_mode='threading'",
         "two clients joining a new room at once: one of them silently misses every message sent to the room",
         SocketioJoinRoom, ("socketio.*",)),
    Case("pybreaker_calling_counter", "pybreaker==1.4.1", pybreaker_calling_counter, "memory",
         "CircuitBreaker.call holds the breaker's RLock only until the generator of `with breaker.calling():` is "
         "returned (pybreaker/__init__.py:250-251, 254-264, 721-722); the failure is then counted outside it, "
         "CircuitMemoryStorage.increment_counter: self._fail_counter += 1 (__init__.py:439)",
         "concurrent failures through `with breaker.calling():` are under-counted, so the breaker does not open "
         "at fail_max and keeps sending traffic to a failing backend",
         PybreakerCalling, ("pybreaker",)),
    Case("urllib3_num_connections", "urllib3==2.5.0", urllib3_num_connections, "memory",
         "HTTPConnectionPool._new_conn does self.num_connections += 1 (urllib3/connectionpool.py:240) without the "
         "pool's lock, reached from _get_conn (:292) when the LIFO queue holds no connection",
         "the 'thread-safe' pool's connection count (logged as 'Starting new HTTP connection (N)', used to "
         "diagnose pool exhaustion) is wrong under concurrency; diagnostic only",
         Urllib3ConnectionCount, ("urllib3.connectionpool",),
         _stub(urllib3.HTTPConnectionPool, "_make_request", _canned_make_request)),
    Case("pydispatcher_connect", "PyDispatcher==2.0.7", pydispatcher_connect, "memory",
         "dispatcher.connect checks `senderkey in connections` / `signal in signals` and creates a fresh "
         "dict/list on a miss (pydispatch/dispatcher.py:132-135, 152-156) in module-global tables, no lock",
         "two receivers connected to the same sender and signal from two threads: one is silently never called",
         PydispatcherConnect, ("pydispatch.*",)),
    Case("tinydb_lost_insert", "tinydb==4.8.2", tinydb_lost_insert, "file",
         "Table.insert -> _update_table reads the whole JSON file (tinydb/table.py:737 -> JSONStorage.read, "
         "storages.py:121-136), adds the document and writes the whole file back (table.py:770 -> "
         "JSONStorage.write, storages.py:138-157); nothing locks the file",
         "two threads (or processes) inserting into one TinyDB file: an insert that returned a doc_id is gone, "
         "or fails with 'Document with ID 1 already exists', or the file is left as invalid JSON",
         TinydbInsert, ("tinydb.*",)),
    Case("keyring_lost_password", "keyrings.alt==5.0.2", keyring_lost_password, "file",
         "Keyring._write_config_value reads keyring_pass.cfg with configparser (keyrings/alt/file_base.py:138-139), "
         "adds the entry and rewrites the file with open(path, 'w') (:150-151); _ensure_file_path may also "
         "truncate a file another thread just wrote (:162-165); no lock",
         "two services storing credentials at once: set_password returns but one password is lost",
         KeyringSetPassword, ("keyrings.alt.*",)),
]

BY_NAME = {case.name: case for case in CASES}


# --- frontrun's side: the same scenario, in frontrun's own API -------------------------------------------------


def frontrun_explore(case: Case, strategy: str, schedules: int, seed: int = 0, total_timeout: float = 300.0) -> dict:
    """Explore ``case``'s scenario with frontrun (run this process under ``frontrun python``); a JSON-able dict."""
    import frontrun

    scenario = case.scenario

    def worker(i: int) -> Callable[[Any], None]:
        return lambda state: state.work(i)

    def invariant(state: Any) -> bool:
        return state.problem() is None

    patterns = sorted({module.split(".")[0] + "*" for module in case.modules})
    options: dict[str, Any] = {"trace_packages": patterns, "total_timeout": total_timeout}
    if strategy == "dpor":
        options["max_executions"] = schedules
    else:
        options.update(max_attempts=schedules, seed=seed)
    stub = case.stub() if case.stub is not None else contextlib.nullcontext()
    started, cpu = time.perf_counter(), time.process_time()
    with stub:
        result = frontrun.explore(setup=scenario, workers=[worker(i) for i in range(case.threads)],
                                  invariant=invariant, strategy=strategy, **options)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    found = result.property_holds is False
    return {"case": case.name, "strategy": strategy, "version": getattr(frontrun, "__version__", "?"),
            "found": found, "inconclusive": result.property_holds is None,
            "schedules": result.num_explored, "requested": schedules, "exhausted": result.exhausted,
            "seconds": seconds, "cpu_seconds": cpu_seconds,
            "reproduced": f"{result.reproduction_successes}/{result.reproduction_attempts}" if found else None,
            "explanation": (result.explanation or "")[:2000] if found else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run one library race under frontrun (use the frontrun launcher)")
    parser.add_argument("--frontrun", metavar="CASE", required=True, choices=sorted(BY_NAME))
    parser.add_argument("--strategy", choices=("dpor", "random"), default="dpor")
    parser.add_argument("--schedules", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--total-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    import logging

    logging.disable(logging.CRITICAL)
    out = frontrun_explore(BY_NAME[args.frontrun], args.strategy, args.schedules, args.seed, args.total_timeout)
    sys.stdout.flush()
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
