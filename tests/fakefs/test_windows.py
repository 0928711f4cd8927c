"""Windows semantics: each sharing violation with its class, errno, winerror and exact message."""

from __future__ import annotations

import errno
import os
import pickle

import pytest
import racecheck.fakefs as fakefs
from racecheck.fakefs.semantics import win_error

fos = fakefs.os_facade
fopen = fakefs.fake_open
R = "/racefs"
SHARING = "The process cannot access the file because it is being used by another process"


def _check(exc: BaseException, cls: type, code: int, winerror: int, text: str) -> None:
    assert isinstance(exc, cls)
    assert exc.errno == code
    assert exc.winerror == winerror
    assert str(exc) == text


def _make(path: str, data: bytes = b"data") -> None:
    with fopen(path, "wb") as f:
        f.write(data)


def test_remove_open_file_is_sharing_violation(windows_run):
    _make(f"{R}/a.ckpt")
    with fopen(f"{R}/a.ckpt", "rb"):
        with pytest.raises(PermissionError) as info:
            fos.remove(f"{R}/a.ckpt")
    _check(info.value, PermissionError, errno.EACCES, 32, f"[WinError 32] {SHARING}: '{R}/a.ckpt'")
    fos.remove(f"{R}/a.ckpt")  # closed: fine
    assert fos.listdir(R) == []


def test_unlink_file_open_for_writing(windows_run):
    f = fopen(f"{R}/w.ckpt", "wb")
    f.write(b"partial")
    with pytest.raises(PermissionError) as info:
        fos.unlink(f"{R}/w.ckpt")
    assert info.value.winerror == 32
    f.close()


def test_rename_open_source_is_sharing_violation(windows_run):
    _make(f"{R}/tmp.ckpt")
    with fopen(f"{R}/tmp.ckpt", "rb"):
        with pytest.raises(PermissionError) as info:
            fos.replace(f"{R}/tmp.ckpt", f"{R}/final.ckpt")
    _check(info.value, PermissionError, errno.EACCES, 32,
           f"[WinError 32] {SHARING}: '{R}/tmp.ckpt' -> '{R}/final.ckpt'")


def test_replace_onto_open_target_is_access_denied(windows_run):
    """MoveFileEx onto a target another handle holds open fails with ERROR_ACCESS_DENIED (5)."""
    _make(f"{R}/tmp.ckpt", b"new")
    _make(f"{R}/final.ckpt", b"old")
    with fopen(f"{R}/final.ckpt", "rb"):
        with pytest.raises(PermissionError) as info:
            fos.replace(f"{R}/tmp.ckpt", f"{R}/final.ckpt")
    _check(info.value, PermissionError, errno.EACCES, 5,
           f"[WinError 5] Access is denied: '{R}/tmp.ckpt' -> '{R}/final.ckpt'")
    fos.replace(f"{R}/tmp.ckpt", f"{R}/final.ckpt")
    assert fopen(f"{R}/final.ckpt", "rb").read() == b"new"


def test_rename_onto_existing_target_fails(windows_run):
    _make(f"{R}/a")
    _make(f"{R}/b")
    with pytest.raises(FileExistsError) as info:
        fos.rename(f"{R}/a", f"{R}/b")
    _check(info.value, FileExistsError, errno.EEXIST, 183,
           f"[WinError 183] Cannot create a file when that file already exists: '{R}/a' -> '{R}/b'")


def test_remove_with_only_share_delete_handles_frees_the_name_at_once(windows_run):
    """Windows 10 1903+ (the generation modelled): DeleteFileW uses POSIX semantics, so a file whose handles all
    share delete loses its name immediately; the handle keeps working on the orphan."""
    store = windows_run.resources["fakefs"]
    handle = store.open(f"{R}/t.tmp", os.O_WRONLY | os.O_CREAT, share_delete=True)
    fos.remove(f"{R}/t.tmp")
    assert fos.listdir(R) == [] and not fos.path.exists(f"{R}/t.tmp")
    assert store.h_write(handle, b"orphan") == 6
    _make(f"{R}/t.tmp", b"new")  # the name is free again
    store.h_close(handle)
    assert fopen(f"{R}/t.tmp", "rb").read() == b"new"


def test_delete_pending_after_delete_on_close_with_another_handle(windows_run):
    """Delete-on-close (O_TEMPORARY) still uses the classic disposition: when that handle closes while another
    (share-delete) handle is open, the name lingers delete-pending until the last close. It still stats (CPython
    falls back to the directory entry), but opening, removing or renaming it is denied."""
    store = windows_run.resources["fakefs"]
    h1 = store.open(f"{R}/t.tmp", os.O_RDWR | os.O_CREAT, share_delete=True, delete_on_close=True)
    h2 = store.open(f"{R}/t.tmp", os.O_RDONLY, share_delete=True, delete_on_close=True)
    store.h_close(h1)
    assert fos.listdir(R) == ["t.tmp"]
    assert fos.path.exists(f"{R}/t.tmp") and fos.stat(f"{R}/t.tmp").st_size == 0
    with pytest.raises(PermissionError) as info:
        fos.remove(f"{R}/t.tmp")
    _check(info.value, PermissionError, errno.EACCES, 5, f"[WinError 5] Access is denied: '{R}/t.tmp'")
    with pytest.raises(PermissionError) as info:
        fos.rename(f"{R}/t.tmp", f"{R}/u.tmp")
    assert info.value.winerror == 5
    with pytest.raises(PermissionError) as info:
        fopen(f"{R}/t.tmp", "rb")
    assert info.value.errno == errno.EACCES and str(info.value) == f"[Errno 13] Permission denied: '{R}/t.tmp'"
    store.h_close(h2)
    assert fos.listdir(R) == []


def test_named_temporary_file_cannot_be_reopened_while_open(windows_run):
    """tempfile docs: on Windows the name cannot be used to open the file a second time while it is open
    (O_TEMPORARY asks for delete access; open() does not share delete): a sharing violation, errno 13."""
    with fakefs.tempfile_facade.NamedTemporaryFile(dir=R) as f:
        f.write(b"x")
        f.flush()
        with pytest.raises(PermissionError) as info:
            fopen(f.name, "rb")
        assert info.value.errno == errno.EACCES and not hasattr(info.value, "winerror")
    assert not fos.path.exists(f.name)


def test_rename_directory_holding_an_open_file_is_access_denied(windows_run):
    fos.makedirs(f"{R}/d/e")
    with fopen(f"{R}/d/e/a.ckpt", "wb"):
        with pytest.raises(PermissionError) as info:
            fos.rename(f"{R}/d", f"{R}/moved")
    _check(info.value, PermissionError, errno.EACCES, 5, f"[WinError 5] Access is denied: '{R}/d' -> '{R}/moved'")
    fos.rename(f"{R}/d", f"{R}/moved")


def test_case_insensitivity_is_ntfs_upcase_not_casefold(windows_run):
    """NTFS maps each character through its upper-case table: "ß" and "ss" (casefold-equal) stay distinct, as do
    "k" and the Kelvin sign; "é"/"É" and "ǆ"/"Ǆ" are the same name."""
    for a, b in (("straße", "strasse"), ("k", "\u212a")):
        _make(f"{R}/{a}", b"1")
        _make(f"{R}/{b}", b"2")
        assert sorted(fos.listdir(R)) == sorted([a, b])
        fos.remove(f"{R}/{a}")
        fos.remove(f"{R}/{b}")
    for a, b in (("é.ckpt", "É.CKPT"), ("\u01c6", "\u01c4"), ("ﬁle", "ﬁLE")):
        _make(f"{R}/{a}", b"1")
        assert fos.path.exists(f"{R}/{b}")
        fos.remove(f"{R}/{b}")
        assert fos.listdir(R) == []


def test_trailing_dots_and_spaces_are_stripped(windows_run):
    _make(f"{R}/a.", b"dot")
    assert fos.listdir(R) == ["a"]
    with fopen(f"{R}/a . .", "rb") as f:
        assert f.read() == b"dot"
    fos.mkdir(f"{R}/d.")
    _make(f"{R}/d./x")  # a component ending in one period loses it
    assert sorted(fos.listdir(R)) == ["a", "d"] and fos.listdir(f"{R}/d") == ["x"]
    assert fos.path.isfile(f"{R}/x/../a")  # ".." is textual on Windows: x need not exist


def test_reserved_device_names(windows_run):
    """DOS device names (Windows 10): the last component CON, NUL, COM1... (also with an extension) names a
    device, not a file: writes vanish, nothing appears in the directory, mkdir fails with WinError 267."""
    for name in ("NUL", "nul.txt", "CON", "com1 .log", "LPT\u00b9"):
        with fopen(f"{R}/{name}", "wb") as f:
            f.write(b"gone")
        assert fos.path.exists(f"{R}/{name}") and not fos.path.isfile(f"{R}/{name}")
    assert fos.listdir(R) == []
    with pytest.raises(NotADirectoryError) as info:
        fos.mkdir(f"{R}/CON")
    _check(info.value, NotADirectoryError, errno.ENOTDIR, 267, f"[WinError 267] The directory name is invalid: "
                                                                 f"'{R}/CON'")
    _make(f"{R}/CON_")  # not reserved
    assert fos.listdir(R) == ["CON_"]


def test_invalid_characters_fail_like_windows(windows_run):
    for ch in '<>:"|?*\x01':
        with pytest.raises(OSError) as info:
            fopen(f"{R}/a{ch}b", "wb")
        assert info.value.errno == errno.EINVAL and not hasattr(info.value, "winerror")
        assert str(info.value) == f"[Errno 22] Invalid argument: {f'{R}/a{ch}b'!r}"
        with pytest.raises(OSError) as info:
            fos.mkdir(f"{R}/a{ch}b")
        _check(info.value, OSError, errno.EINVAL, 123,
               f"[WinError 123] The filename, directory name, or volume label syntax is incorrect: "
               f"{f'{R}/a{ch}b'!r}")
    assert fos.listdir(R) == []


def test_named_temporary_file_deletes_on_close(windows_run):
    with fakefs.tempfile_facade.NamedTemporaryFile(dir=R) as f:
        f.write(b"x")
        name = f.name
        fos.remove(name)  # O_TEMPORARY shares delete
    assert not fos.path.exists(name)


def test_case_insensitive_names_keep_their_case(windows_run):
    _make(f"{R}/Epoch=1.CKPT")
    assert fos.path.exists(f"{R}/epoch=1.ckpt")
    with fopen(f"{R}/EPOCH=1.ckpt", "rb") as f:
        assert f.read() == b"data"
    assert fos.listdir(R) == ["Epoch=1.CKPT"]
    fos.rename(f"{R}/epoch=1.ckpt", f"{R}/epoch=1.ckpt")  # case-only rename keeps the entry
    assert fos.listdir(R) == ["epoch=1.ckpt"]
    fos.remove(f"{R}/EPOCH=1.CKPT")
    assert fos.listdir(R) == []


def test_directory_errors(windows_run):
    fos.makedirs(f"{R}/d/e")
    with pytest.raises(PermissionError) as info:
        fos.remove(f"{R}/d")
    assert info.value.winerror == 5
    with pytest.raises(OSError) as info:
        fos.rmdir(f"{R}/d")
    _check(info.value, OSError, errno.ENOTEMPTY, 145, f"[WinError 145] The directory is not empty: '{R}/d'")
    with pytest.raises(FileNotFoundError) as info:
        fos.remove(f"{R}/missing")
    _check(info.value, FileNotFoundError, errno.ENOENT, 2,
           f"[WinError 2] The system cannot find the file specified: '{R}/missing'")
    with pytest.raises(FileNotFoundError) as info:
        fos.listdir(f"{R}/nodir/x")
    assert info.value.winerror == 3


def test_open_missing_file_is_a_crt_error_without_winerror(windows_run):
    with pytest.raises(FileNotFoundError) as info:
        fopen(f"{R}/missing", "rb")
    assert not hasattr(info.value, "winerror")
    assert str(info.value) == f"[Errno 2] No such file or directory: '{R}/missing'"


def test_posix_unlink_and_rename_over_open_files_succeed(posix_run):
    store = posix_run.resources["fakefs"]
    f = fopen(f"{R}/a", "wb")
    f.write(b"before")
    f.flush()
    fos.remove(f"{R}/a")
    f.write(b"-after")
    f.flush()
    assert store.open_handles() == [(f"{R}/a", "wb", True)]  # an orphan, still written
    f.close()
    assert store.files() == []
    _make(f"{R}/target", b"old")
    _make(f"{R}/src", b"new")
    with fopen(f"{R}/target", "rb") as reader:
        fos.replace(f"{R}/src", f"{R}/target")
        assert reader.read() == b"old"  # the open handle keeps the replaced inode
    assert fopen(f"{R}/target", "rb").read() == b"new"


def test_windows_semantics_hide_posix_only_open_flags():
    """Feature tests like ``hasattr(os, "O_DIRECTORY")`` take their Windows branch under windows semantics."""
    import os as real_os

    import racecheck
    from racecheck.fakefs import os_facade

    seen = {}

    def probe():
        seen["has_o_directory"] = hasattr(os_facade, "O_DIRECTORY")
        seen["o_rdonly"] = os_facade.O_RDONLY

    racecheck.explore(probe, schedules=1, fs="windows")
    assert seen == {"has_o_directory": False, "o_rdonly": real_os.O_RDONLY}
    racecheck.explore(probe, schedules=1, fs="posix")
    assert seen["has_o_directory"] is True
    assert hasattr(os_facade, "O_DIRECTORY")  # outside a run: the real module's answer


def test_trailing_separator_after_a_file_name_is_an_invalid_name(windows_run):
    _make(f"{R}/a")
    with pytest.raises(OSError) as info:
        fos.stat(f"{R}/a/")
    _check(info.value, OSError, errno.EINVAL, 123,
           f"[WinError 123] The filename, directory name, or volume label syntax is incorrect: '{R}/a/'")
    with pytest.raises(OSError) as info:
        fopen(f"{R}/a/", "rb")
    assert info.value.errno == errno.EINVAL and not hasattr(info.value, "winerror")


@pytest.mark.parametrize("winerror", [2, 32, 183, 267, 145])
def test_windows_errors_are_their_builtin_class_with_winerror_and_pickle_as_themselves(winerror):
    """Each Windows error is a direct subclass of the builtin it is named as (no shared base class between them
    and the builtin: printing and pickling are functions each class takes, ``semantics.windows_text`` and
    ``windows_rebuilt``), and survives pickling (a child process's error crosses to the parent) with its class,
    winerror and text."""
    exc = win_error(winerror, f"{R}/a", f"{R}/b")
    builtin = type(exc).__mro__[1]
    assert type(exc).__name__ == builtin.__name__ and builtin.__module__ == "builtins"
    assert builtin in (PermissionError, FileNotFoundError, FileExistsError, NotADirectoryError, OSError)
    assert str(exc).startswith(f"[WinError {winerror}] ") and str(exc).endswith(f": '{R}/a' -> '{R}/b'")
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is type(exc) and again.winerror == winerror and str(again) == str(exc)
