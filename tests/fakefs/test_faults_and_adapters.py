"""Faults from the choice stream, the fsspec adapter's contract, and isolation from the real disk."""

from __future__ import annotations

import errno
import os
import threading

import fsspec
import pytest
import racecheck.fakefs as fakefs
from fakerun_helpers import bound_run
from racecheck.fakefs import FakeFS

fos = fakefs.os_facade
fopen = fakefs.fake_open


def _write(path: str, data: bytes) -> None:
    with fopen(path, "wb", buffering=0) as f:
        f.write(data)


def test_enospc_at_quota():
    with bound_run(FakeFS(enospc_quota=10)) as run:
        _write("/racefs/a", b"12345678")
        with pytest.raises(OSError) as info:
            _write("/racefs/b", b"123")
        assert info.value.errno == errno.ENOSPC
        fos.remove("/racefs/a")
        _write("/racefs/b", b"123")  # space freed
        assert [p for p, *_ in run.resources["fakefs"].files()] == ["/racefs/b"]


def test_drawn_disk_full_and_eio_positions_come_from_choices():
    with bound_run(FakeFS(enospc=True, fault_window=4), choices={"fs.enospc": 2}) as run:
        _write("/racefs/a", b"x")
        with pytest.raises(OSError) as info:
            _write("/racefs/b", b"y")
        assert info.value.errno == errno.ENOSPC
    assert ("fs.enospc", 5, 2) in run.drawn
    with bound_run(FakeFS(eio=("fsync",), fault_window=3), choices={"fs.eio": 1}) as run:
        with fopen("/racefs/a", "wb") as f:
            f.write(b"x")
            with pytest.raises(OSError) as info:
                fos.fsync(f.fileno())
        assert info.value.errno == errno.EIO
        assert run.resources["fakefs"].faults.injected == ["EIO at fsync /racefs/a"]


def test_latency_sleeps_in_virtual_time_and_no_fault_is_choice_zero():
    with bound_run(FakeFS(latency=(0.5, 2.0)), choices={"fs.latency": [0, 2, 1]}) as run:
        _write("/racefs/a", b"x")  # open, write, close
    assert run.clock == 2.5
    assert run.points == ["fs.open /racefs/a wb", "fs.write /racefs/a 1", "sleep 2.0", "fs.close /racefs/a",
                          "sleep 0.5"]
    assert [v for label, _, v in run.drawn] == [0, 2, 1]


def test_every_store_operation_schedules_before_its_effect():
    seen = []

    with bound_run("posix") as run:
        store = run.resources["fakefs"]

        def schedule(op, **_kw):
            seen.append((op, [p for p, *_ in store.files()]))
            return True

        run.schedule = schedule
        _write("/racefs/a", b"x")
        fos.replace("/racefs/a", "/racefs/b")
    assert seen[0] == ("fs.open /racefs/a wb", [])  # not yet created when the point is reached
    assert seen[-1] == ("fs.rename /racefs/a -> /racefs/b", ["/racefs/a"])


# ----------------------------------------------------------------------------------------------- fsspec
def test_strip_protocol_mapping():
    from racecheck.fakefs.integrations.fsspec_adapter import RaceFileSystem

    fs = RaceFileSystem()
    for url in ("racefs://x/y", "racefs:///x/y", "/racefs/x/y", "racefs:///racefs/x/y", "racefs://x/y/"):
        assert fs._strip_protocol(url) == "/racefs/x/y", url
    assert fs._strip_protocol("racefs://") == "/racefs"
    assert fs.unstrip_protocol("/racefs/x") == "racefs:///racefs/x"


def test_fsspec_primitives_and_transaction():
    store = fakefs.reset_default_store()
    fs, path = fsspec.url_to_fs("racefs://d/a.bin")
    fs.makedirs("racefs://d", exist_ok=True)
    fs.pipe(path, b"hello")
    assert fs.cat(path) == b"hello" and fs.exists(path) and fs.isfile(path) and fs.isdir("racefs://d")
    assert fs.info(path)["size"] == 5 and fs.ls("racefs://d", detail=False) == ["/racefs/d/a.bin"]
    fs.cp_file(path, "racefs://d/b.bin")
    fs.mv("racefs://d/b.bin", "racefs://d/c.bin")
    assert sorted(fs.ls("racefs://d", detail=False)) == ["/racefs/d/a.bin", "/racefs/d/c.bin"]
    with fs.transaction:
        with fs.open("racefs://d/t.bin", "wb") as f:
            f.write(b"txn")
        assert not fs.exists("racefs://d/t.bin")  # invisible until commit
    assert fs.cat("racefs://d/t.bin") == b"txn"
    with pytest.raises(ZeroDivisionError):
        with fs.transaction:
            with fs.open("racefs://d/u.bin", "wb") as f:
                f.write(b"never")
            raise ZeroDivisionError
    assert not fs.exists("racefs://d/u.bin")
    fs.rm("racefs://d", recursive=True)
    assert store.files() == [] and not fs.exists("racefs://d")
    with fs.open("racefs://text.txt", "w") as f:
        f.write("text mode")
    assert fs.read_text("racefs://text.txt") == "text mode"


def test_fsspec_instances_per_thread_share_one_store():
    store = fakefs.reset_default_store()

    def worker(i):
        fs, path = fsspec.url_to_fs(f"racefs://w{i}.bin")
        fs.pipe(path, bytes([i]))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p for p, *_ in store.files()] == [f"/racefs/w{i}.bin" for i in range(4)]


def test_run_store_is_used_inside_a_run_and_default_outside():
    default = fakefs.reset_default_store()
    fs = fsspec.filesystem("racefs")
    with bound_run("posix") as run:
        fs.pipe("racefs://in-run", b"1")
        assert [p for p, *_ in run.resources["fakefs"].files()] == ["/racefs/in-run"]
    assert default.files() == []


# --------------------------------------------------------------------------------------------- isolation
def test_mounted_paths_never_touch_real_disk_and_others_do(tmp_path):
    from racecheck.control import instrument

    with bound_run("posix") as run:
        from racecheck.fakefs import pycompat

        modules = ["fsspec.implementations.local", *pycompat.pathlib_modules()]  # 3.13: pathlib._local too
        patch = instrument.apply(instrument.resolve_modules(modules))
        try:
            import pathlib

            from fsspec.implementations.local import LocalFileSystem

            local = LocalFileSystem()
            local.makedirs("/racefs/deep/dir", exist_ok=True)
            local.pipe("/racefs/deep/dir/f.bin", b"fake")
            with local.transaction:
                local.pipe("/racefs/deep/dir/g.bin", b"txn")
            local.mv("/racefs/deep/dir/f.bin", "/racefs/deep/h.bin")
            p = pathlib.Path("/racefs/deep/p.txt")
            p.write_text("via pathlib")
            assert p.exists() and p.read_text() == "via pathlib" and pathlib.Path("/racefs/deep").is_dir()
            names = sorted(x.name for x in pathlib.Path("/racefs/deep").iterdir())
            assert names == ["dir", "h.bin", "p.txt"]
            real_file = tmp_path / "real.bin"
            local.pipe(str(real_file), b"real")
            pathlib.Path(tmp_path / "real.txt").write_text("real")
        finally:
            patch.restore()
        files = [p for p, *_ in run.resources["fakefs"].files()]
    assert files == ["/racefs/deep/dir/g.bin", "/racefs/deep/h.bin", "/racefs/deep/p.txt"]
    assert not os.path.exists("/racefs")
    assert real_file.read_bytes() == b"real" and (tmp_path / "real.txt").read_text() == "real"


def test_outside_a_run_the_facades_are_the_real_os(tmp_path):
    path = tmp_path / "x.txt"
    with fopen(path, "w") as f:
        f.write("real")
    assert fos.path.exists(path) and fos.listdir(tmp_path) == ["x.txt"]
    assert not fos.path.exists("/racefs/x.txt")
