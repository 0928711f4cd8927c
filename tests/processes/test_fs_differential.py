"""A child's file operations on the fake filesystem (each one performed by its proxy on the parent's store) behave
as the real OS's do for a child: hypothesis-generated sequences of operations run in a real child on a real
temporary folder, and in a child of a racecheck run on ``fs="posix"``; the outcomes (results and exception types)
must be equal, op for op."""

import functools
import multiprocessing
import os
import shutil
import tempfile

import racecheck
import racecheck.fakefs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

NAMES = st.sampled_from(["a", "a", "b", "d/c"])  # mostly one file, so operations meet what others did
OPS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["write", "append", "fd_write"]), NAMES, st.binary(max_size=6)),
    st.tuples(st.sampled_from(["read", "remove", "size", "exists", "read_open_remove"]), NAMES),
    st.tuples(st.just("rename"), NAMES, NAMES),
    st.sampled_from([("mkdir", "d"), ("rmdir", "d"), ("listdir", ""), ("listdir", "d")]),
), min_size=2, max_size=8)


def _do(root, op):
    name, *args = op
    path = os.path.join(root, args[0]) if args else root
    if name in ("write", "append"):
        with open(path, "wb" if name == "write" else "ab") as f:
            return f.write(args[1])
    if name == "fd_write":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            return os.write(fd, args[1])
        finally:
            os.close(fd)
    if name == "read":
        with open(path, "rb") as f:
            return f.read()
    if name == "read_open_remove":  # posix: a file removed while open is still read through its handle
        with open(path, "rb") as f:
            os.remove(path)
            return f.read()
    if name == "remove":
        return os.remove(path)
    if name == "size":
        return os.path.getsize(path)
    if name == "exists":
        return os.path.exists(path)
    if name == "rename":
        return os.rename(path, os.path.join(root, args[1]))
    if name == "mkdir":
        return os.mkdir(path)
    if name == "rmdir":
        return os.rmdir(path)
    return sorted(os.listdir(path))


START = [("write", "a", b"start"), ("mkdir", "d"), ("fd_write", "d/c", b"c")]  # something to meet


def _outcomes(root, ops, report):
    out = []
    for op in START + ops:
        try:
            out.append(("ok", _do(root, op)))
        except BaseException as exc:  # noqa: BLE001 - the exception type is the outcome
            out.append(("raise", type(exc).__name__))
    report.put(out)


def in_child(root, ops, sink):
    ctx = multiprocessing.get_context("fork")
    report = ctx.Queue()
    child = ctx.Process(target=_outcomes, args=(root or racecheck.fakefs.root(), ops, report))
    child.start()
    sink.append(report.get())
    child.join()


@SETTINGS
@given(OPS)
def test_a_childs_file_operations_on_the_fake_filesystem_match_the_real_os(ops):
    real: list = []
    folder = tempfile.mkdtemp(prefix="racecheck-fsdiff-")
    try:
        in_child(folder, ops, real)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    served: list = []
    result = racecheck.explore(functools.partial(in_child, None, ops, served), schedules=1, fs="posix",
                               memory=False)
    assert result.ok, result.failure
    assert served[-1] == real[0], ops
