"""The fake filesystem's tables of operations agree (issue 44: "a fake-fs operation is listed in 4 tables").

* The functions stood in for are listed once, in the real disk's tables (``realdisk.Calls``); the facades of
  ``os_calls`` and ``shutil_calls`` are built from them, and activation swaps what the facades hold.
* The store's operation kinds (``FakeFS``'s ``MUTATING_OPS``/``READ_OPS``, the vocabulary of ``crash_ops=`` and
  ``eio=``) are their own table; here they are checked against the kinds the store's operations declare at their
  scheduling point and at their end, read from the source.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import racecheck.fakefs.store as store_package
from racecheck.fakefs import os_calls, realdisk, shutil_calls
from racecheck.fakefs.spec import ALL_OPS, FakeFS


def _declared_kinds() -> dict[str, set[str]]:
    """The kind each store operation passes to ``enter``/``enter_handle`` (first argument) and ``leave`` (second),
    by method: what faults count and crashes follow."""
    found: dict[str, set[str]] = {"enter": set(), "leave": set()}
    for path in Path(store_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                at = {"enter": 0, "enter_handle": 0, "leave": 1}.get(node.func.attr)
                if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant):
                    found["leave" if at else "enter"].add(node.args[at].value)
    return found


def test_the_store_declares_exactly_the_operation_kinds_fakefs_knows():
    kinds = _declared_kinds()
    assert kinds["enter"] == kinds["leave"] == set(ALL_OPS)
    assert FakeFS(eio=True).eio_kinds <= ALL_OPS


@pytest.mark.parametrize("facade, real, table", [
    (os_calls.os_facade, os, realdisk.os_calls), (os_calls.path_facade, os.path, realdisk.path_calls),
    (shutil_calls.shutil_facade, shutil, realdisk.shutil_calls),
    (shutil_calls.tempfile_facade, tempfile, realdisk.tempfile_calls)])
def test_each_facade_stands_in_for_what_the_real_disk_lists(facade, real, table):
    overridden = {name for name, value in vars(facade).items() if not name.startswith("_") and name != "path"}
    extra = {"fdopen"} if real is os else set()  # a file object: the real disk's is realdisk_files.disk_open
    assert overridden == set(vars(table)) | extra
    for name in vars(table):
        assert getattr(facade, name) is not getattr(real, name)


def test_a_listed_function_without_a_stand_in_fails_at_import():
    table = realdisk.Calls()
    table.chown = os.chown
    table.remove = os.remove

    def remove(path):
        return path

    assert table.stand_ins({"remove": remove}, chown=remove) == {"chown": remove, "remove": remove}
    with pytest.raises(LookupError, match=r"\['chown'\] have no stand-in"):
        table.stand_ins({"remove": remove})
    with pytest.raises(LookupError, match=r"\['lchown'\] are not listed"):
        table.stand_ins({"remove": remove}, chown=remove, lchown=remove)
