"""``racefs://`` — the store as an fsspec filesystem.

fsspec caches filesystem instances per thread, so the instance holds no state: every call looks up the store at
call time (the run's store inside a controlled run, else the process-global default). Only fsspec's primitives
are implemented; exists/isfile/cat/pipe/rm/find/... come from AbstractFileSystem.

Path mapping: ``racefs://a/b`` and ``racefs:///a/b`` are the store path ``<root>/a/b``; a path that already
starts with the root (``/racefs/a/b``, or ``racefs:///racefs/a/b``) is taken as is, so names returned by ``ls``
are also valid os-level paths of the mounted store.
"""

from __future__ import annotations

import posixpath
import shutil
import stat as stat_mod
from typing import Any

from fsspec.spec import AbstractFileSystem
from fsspec.utils import stringify_path
from racecheck.fakefs import handles
from racecheck.fakefs.mount import current_store
from racecheck.fakefs.store import stat_result


class _TransactionFile:
    """A write opened inside ``fs.transaction``: goes to a hidden temp file in the same directory and is renamed
    over the target on commit (removed on discard), as LocalFileSystem does with mkstemp + move."""

    def __init__(self, store: Any, temp: str, path: str, mode: str) -> None:
        self._store = store
        self.temp = temp
        self.path = path
        self.f = handles.open_file(store, temp, mode)

    def __getattr__(self, item: str) -> Any:
        return getattr(self.__dict__["f"], item)

    def __enter__(self) -> _TransactionFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.f.close()

    def write(self, data: Any) -> int:
        return self.f.write(data)

    def close(self) -> None:
        self.f.close()

    @property
    def closed(self) -> bool:
        return self.f.closed

    def commit(self) -> None:
        self.f.close()
        self._store.rename(self.temp, self.path, replace=True)

    def discard(self) -> None:
        self.f.close()
        self._store.remove(self.temp)


class RaceFileSystem(AbstractFileSystem):
    """fsspec filesystem over the racecheck fake store (protocol ``racefs``)."""

    protocol = "racefs"
    root_marker = "/"

    def __init__(self, auto_mkdir: bool = False, **kwargs: Any) -> None:
        """``auto_mkdir`` as in LocalFileSystem: writing, touching, copying or moving to a path first creates its
        parent directories."""
        super().__init__(**kwargs)
        self.auto_mkdir = auto_mkdir

    def _ensure_parent(self, path: str) -> None:
        if self.auto_mkdir:
            self.makedirs(self._parent(path), exist_ok=True)

    @property
    def store(self) -> Any:
        return current_store()

    @property
    def fsid(self) -> str:
        return "racefs"

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, (list, tuple)):
            return type(path)(cls._strip_protocol(p) for p in path)
        path = stringify_path(path)
        for prefix in ("racefs://", "racefs:"):
            if path.startswith(prefix):
                path = path[len(prefix):]
                break
        root = current_store().root
        path = posixpath.normpath("/" + path.lstrip("/")) if path.strip("/") else root
        if path == root or path.startswith(root + "/"):
            return path
        return root + path

    def unstrip_protocol(self, name: str) -> str:
        return "racefs://" + self._strip_protocol(name)

    @classmethod
    def _parent(cls, path: Any) -> str:
        path = cls._strip_protocol(path)
        return path.rsplit("/", 1)[0] or "/"

    # ------------------------------------------------------------------------------------- primitives
    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: bool = True,
              cache_options: Any = None, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        store = self.store
        if any(c in mode for c in "wxa"):
            self._ensure_parent(path)
        if autocommit or "r" in mode:
            return handles.open_file(store, path, mode)
        directory, name = posixpath.split(path)
        temp = store.temp_name(directory, f".{name}.", ".racefs-tmp")
        return _TransactionFile(store, temp, path, mode)

    def _info_of(self, path: str, node: Any) -> dict:
        st = stat_result(node)
        return {"name": path, "size": st.st_size if not node.is_dir else 0,
                "type": "directory" if node.is_dir else "file", "created": st.st_ctime,
                "mtime": st.st_mtime, "mode": st.st_mode, "ino": st.st_ino, "nlink": st.st_nlink,
                "islink": False}

    def info(self, path: Any, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        st = self.store.stat(path)
        is_dir = stat_mod.S_ISDIR(st.st_mode)
        return {"name": path, "size": 0 if is_dir else st.st_size, "type": "directory" if is_dir else "file",
                "created": st.st_ctime, "mtime": st.st_mtime, "mode": st.st_mode, "ino": st.st_ino,
                "nlink": st.st_nlink, "islink": False}

    def ls(self, path: Any, detail: bool = True, **kwargs: Any) -> list:
        path = self._strip_protocol(path)
        info = self.info(path)
        if info["type"] != "directory":
            return [info] if detail else [path]
        listing = self.store.listdir(path)
        if not detail:
            return [posixpath.join(path, name) for name, _ in listing]
        return [self._info_of(posixpath.join(path, name), node) for name, node in listing]

    def rm_file(self, path: Any) -> None:
        path = self._strip_protocol(path)
        if self.isdir(path):
            self.store.rmdir(path)
        else:
            self.store.remove(path)

    def _rm(self, path: Any) -> None:
        self.rm_file(path)

    def rmdir(self, path: Any) -> None:
        self.store.rmdir(self._strip_protocol(path))

    def mkdir(self, path: Any, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if self.exists(path):
            raise FileExistsError(path)
        if create_parents:
            self.makedirs(path, exist_ok=True)
        else:
            self.store.mkdir(path)

    def makedirs(self, path: Any, exist_ok: bool = False) -> None:
        path = self._strip_protocol(path)
        store = self.store
        parts = path[len(store.root):].strip("/").split("/") if path != store.root else []
        current = store.root
        for i, part in enumerate(parts):
            current = f"{current}/{part}"
            last = i == len(parts) - 1
            st = store.stat(current, quiet=True)
            if st is None:
                store.mkdir(current)
            elif last and not exist_ok:
                raise FileExistsError(path)
        if not parts and not exist_ok:
            raise FileExistsError(path)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: Any = None, **kwargs: Any) -> None:
        """Single paths: what LocalFileSystem does (``shutil.move``): onto an existing directory the source moves
        *into* it; otherwise one atomic rename replacing a file. Lists: fsspec's copy + delete."""
        if not (isinstance(path1, str) and isinstance(path2, str)):
            super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
            return
        src, dst = self._strip_protocol(path1), self._strip_protocol(path2)
        self._ensure_parent(dst)
        store = self.store
        st = store.stat(dst, quiet=True)
        if st is not None and stat_mod.S_ISDIR(st.st_mode):
            if src == dst:  # shutil.move(d, d): a rename onto itself, nothing moves
                return
            dst = posixpath.join(dst, posixpath.basename(src.rstrip("/")))
            if store.stat(dst, quiet=True) is not None:
                raise shutil.Error(f"Destination path '{dst}' already exists")
        store.rename(src, dst, replace=True)

    def cp_file(self, path1: Any, path2: Any, **kwargs: Any) -> None:
        path1, path2 = self._strip_protocol(path1), self._strip_protocol(path2)
        self._ensure_parent(path2)
        if self.isfile(path1):
            store = self.store
            with handles.open_file(store, path1, "rb") as src:
                data = src.read()
            with handles.open_file(store, path2, "wb") as dst:
                dst.write(data)
        elif self.isdir(path1):
            self.makedirs(path2, exist_ok=True)
        else:
            raise FileNotFoundError(path1)

    def touch(self, path: Any, truncate: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        self._ensure_parent(path)
        with handles.open_file(self.store, path, "wb" if truncate else "ab"):
            pass

    def created(self, path: Any) -> Any:
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["created"], tz=datetime.timezone.utc)

    def modified(self, path: Any) -> Any:
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], tz=datetime.timezone.utc)

__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
