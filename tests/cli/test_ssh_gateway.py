"""A real remote gateway: ``racecheck run --tx ssh=...`` against an sshd started on the loopback address.

The ssh gateway is execnet's: it runs ``ssh`` to reach a Python on the other side and ships the units there. The
remote side here is this machine, reached through a real sshd with its own keys, so what the test checks is the
whole path a user's ``--tx ssh=host//python=...`` takes: ssh, the remote interpreter importing racecheck and the
catalogue, units out and results back. The answer must be the same failure and the same token as ``--jobs 1``.
Skips, saying why, where no sshd can be started (``.ci/run`` installs openssh-server where it is missing).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import racecheck_subprocess

pytest.importorskip("execnet")
pytest.importorskip("lightning")

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
ARGS = ("run", "delete-while-queued", "--fs", "posix", "--schedules", "50", "-q")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   capture_output=True)


def _wait_for_login(config: Path, process: subprocess.Popen) -> str | None:
    """None once sshd says it listens and ``ssh 127.0.0.1 true`` succeeds; otherwise why not. Reads sshd's own
    log (``-e``) for its "Server listening" line, bounded in time, instead of polling the port."""
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = process.stderr.readline()
        if not line:
            return f"sshd exited with {process.wait()}: {' '.join(seen)[-300:]}"
        seen.append(line.strip())
        if "Server listening" in line:
            probe = subprocess.run(["ssh", "-F", str(config), "127.0.0.1", "true"], capture_output=True,
                                   text=True, timeout=30)
            return None if probe.returncode == 0 else f"could not log in over ssh: {probe.stderr.strip()[-300:]}"
    return f"sshd did not start listening within 30 s: {' '.join(seen)[-300:]}"


@pytest.fixture
def ssh_config(tmp_path):
    """An sshd on 127.0.0.1 that lets this user in with a fresh key; yields the client's ssh_config path."""
    if SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("no sshd/ssh/ssh-keygen on this machine (.ci/run installs openssh-server)")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    _keygen(tmp_path / "host_key")
    _keygen(tmp_path / "client_key")
    (tmp_path / "authorized_keys").write_text((tmp_path / "client_key.pub").read_text())
    os.chmod(tmp_path, 0o700)
    port = _free_port()
    server = tmp_path / "sshd_config"
    server.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp_path / 'host_key'}\n"
        f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\nPidFile {tmp_path / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPrintMotd no\nAcceptEnv none\n"
    )
    client = tmp_path / "ssh_config"
    client.write_text(
        f"Host 127.0.0.1\n  Port {port}\n  IdentityFile {tmp_path / 'client_key'}\n  IdentitiesOnly yes\n"
        "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  BatchMode yes\n  LogLevel ERROR\n"
    )
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(server)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        why = _wait_for_login(client, process)
        if why is not None:
            pytest.skip(f"no sshd could be started on 127.0.0.1: {why}")
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep sshd's log pipe drained
        yield client
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _cells(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "RACE FOUND" in line or "replay with" in line]


def test_ssh_gateway_gets_the_same_failure_and_token_as_one_process(ssh_config):
    local = racecheck_subprocess(*ARGS, "--jobs", "1")
    remote = racecheck_subprocess(*ARGS, "--tx", f"ssh=127.0.0.1//python={sys.executable}//ssh_config={ssh_config}")
    assert local.returncode == 1, local.stderr
    assert remote.returncode == 1, remote.stderr
    assert _cells(remote.stdout) == _cells(local.stdout)
    tokens = re.findall(r"racecheck replay (rcc1\.\S+)", remote.stdout)
    assert tokens and tokens == re.findall(r"racecheck replay (rcc1\.\S+)", local.stdout)
