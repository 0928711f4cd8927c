"""Linux's name limits, differential: NAME_MAX (255 bytes a name) and PATH_MAX (4096 bytes a path, NUL included)
give ENAMETOOLONG on a real tmpfs directory and on the fake alike, for generated names and operations.

A name's limit is in bytes, so names are drawn from one-, two- and three-byte characters around the limit. A
path's limit counts the whole string as passed, so each side pads its own (differently long) root with ``./``
components to the same total length, and both see the same string length at the same place.
"""

from __future__ import annotations

import os

import real_tmpfs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CHARS = ["a", "é", "€"]  # 1, 2 and 3 bytes in UTF-8
OPS = ["open_wb", "open_rb", "mkdir", "makedirs", "stat", "remove", "rmdir", "listdir", "rename_to", "rename_from",
       "exists"]
NAME_LENGTHS = [1, 127, 128, 254, 255, 256, 300]  # in bytes (the character repeated to reach it, or just past)
PATH_TOTALS = [4090, 4094, 4095, 4096, 4097, 4100]


def _name(char: str, size: int) -> str:
    count = max(1, -(-size // len(char.encode())))
    return char * count


def _outcome(call) -> object:
    try:
        value = call()
    except OSError as exc:
        return (type(exc).__name__, exc.errno)
    return value if isinstance(value, (bool, int, list, type(None))) else type(value).__name__


def _op(kind: str, path: str, other: str) -> object:
    if kind == "open_wb":
        def call():
            with open(path, "wb") as f:
                f.write(b"x")
        return _outcome(call)
    if kind == "open_rb":
        return _outcome(lambda: open(path, "rb").close())
    if kind == "mkdir":
        return _outcome(lambda: os.mkdir(path))
    if kind == "makedirs":
        return _outcome(lambda: os.makedirs(path, exist_ok=True))
    if kind == "stat":
        return _outcome(lambda: os.stat(path).st_mode >> 12)
    if kind == "remove":
        return _outcome(lambda: os.remove(path))
    if kind == "rmdir":
        return _outcome(lambda: os.rmdir(path))
    if kind == "listdir":
        return _outcome(lambda: sorted(os.listdir(path)))
    if kind == "rename_to":
        return _outcome(lambda: os.rename(other, path))
    if kind == "rename_from":
        return _outcome(lambda: os.rename(path, other))
    return os.path.exists(path)


def program(root: str, steps: list) -> list:
    """Each step: (op, where, name length, character, path total or None). ``where``: the name itself, under an
    existing directory, under a missing one, or as a directory with a child."""
    os.mkdir(f"{root}/d")
    with open(f"{root}/f", "wb") as f:
        f.write(b"f")
    out = []
    for kind, where, size, char, total in steps:
        name = _name(char, size)
        rel = {"top": name, "in_dir": f"d/{name}", "in_missing": f"missing/{name}", "as_parent": f"{name}/x"}[where]
        if total is not None:
            rel = _padded(root, rel, total)
        out.append(_op(kind, f"{root}/{rel}", f"{root}/f"))
        if kind == "rename_from" and out[-1] is None:
            os.rename(f"{root}/f", f"{root}/{rel}")  # put it back where the next step expects it
    return out


def _padded(root: str, rel: str, total: int) -> str:
    """``rel`` behind ``./`` components (and one ``././``-free adjustment) so that root/rel is ``total`` bytes."""
    room = total - len(os.fsencode(f"{root}/{rel}"))
    if room <= 0:
        return rel
    pad = "./" * (room // 2)
    if room % 2:
        pad = "d/../" + "./" * ((room - 5) // 2) if room >= 5 else pad
    return pad + rel


def run_real(steps: list) -> list:
    return real_tmpfs.on_real(lambda root: program(root, steps), "racefs-names-")


def run_fake(steps: list) -> list:
    return real_tmpfs.on_fake(lambda root: program(root, steps))


step = st.tuples(
    st.sampled_from(OPS), st.sampled_from(["top", "in_dir", "in_missing", "as_parent"]), st.sampled_from(NAME_LENGTHS),
    st.sampled_from(CHARS), st.one_of(st.none(), st.sampled_from(PATH_TOTALS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=8))
def test_name_and_path_limits_match_real_linux(steps):
    real, fake = run_real(steps), run_fake(steps)
    assert real == fake, f"steps: {steps}\nreal: {real}\nfake: {fake}"


def test_limits_spelled_out():
    """The edges, one by one: 255 bytes is a name, 256 is not; a 4095-byte path is looked up, 4096 is not."""
    steps = [("open_wb", "top", 255, "a", None), ("open_wb", "top", 256, "a", None),
             ("mkdir", "in_missing", 300, "a", None), ("mkdir", "as_parent", 256, "a", None),
             ("stat", "top", 254, "é", None), ("stat", "top", 256, "é", None),
             ("open_wb", "in_dir", 1, "a", 4095), ("open_wb", "in_dir", 1, "a", 4096)]
    expected = [None, ("OSError", 36), ("FileNotFoundError", 2), ("OSError", 36),
                ("FileNotFoundError", 2), ("OSError", 36), None, ("OSError", 36)]
    assert run_real(steps) == expected
    assert run_fake(steps) == expected
