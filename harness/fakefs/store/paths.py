"""Path resolution: how a path under the mount root leads to an inode, as the imitated OS walks it.

The resolver knows the semantics (POSIX or Windows) and the mount root, never the tree itself: every walk starts
from the root directory it is handed, since a power loss gives the store a new one.
"""

from __future__ import annotations

import errno
import os
import posixpath
from typing import Any

from racecheck.fakefs.store.nodes import Inode

ROOT, NORM, DOT, DOTDOT, DEVICE = "root", "name", ".", "..", "device"


class Where:
    """The outcome of resolving a path: the directory holding the last component and what it names.

    ``kind`` is NORM for an ordinary last name, DOT/DOTDOT for ``.``/``..`` and ROOT for the mount root (each
    fails differently in rename/unlink/rmdir/mkdir); ``slash`` says the path ended in "/"; ``canon`` is the
    canonical path (for the journal); ``chain`` the directories walked through (ancestor checks of rename)."""

    __slots__ = ("parent", "key", "name", "inode", "kind", "slash", "canon", "chain")

    def __init__(self, parent: Inode | None, key: str, name: str, inode: Inode | None, kind: str, slash: bool,
                 canon: str, chain: tuple) -> None:
        self.parent, self.key, self.name, self.inode = parent, key, name, inode
        self.kind, self.slash, self.canon, self.chain = kind, slash, canon, chain


def display(path: str) -> str:
    """The path as the trace shows it (textually normalised: deterministic and short)."""
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


class PathResolver:
    """Walks paths under ``root`` with the given semantics (``racecheck.fakefs.semantics``): components, ``.`` and
    ``..``, trailing slashes, DOS device names, and the length limits of names and whole paths."""

    __slots__ = ("sem", "root", "win")

    def __init__(self, sem: Any, root: str) -> None:
        self.sem = sem
        self.root = root
        self.win = sem.name == "windows"

    def parts(self, path: str) -> list[str]:
        """The raw components of a path under the root ("a/./b/" -> ["a", ".", "b", ""]): nothing resolved yet."""
        if path == self.root:
            return []
        if not path.startswith(self.root + "/"):
            raise ValueError(f"{path!r} is not under the fake filesystem root {self.root!r}")
        return path[len(self.root) + 1:].split("/")

    def resolve(self, top: Inode, path: str, shown: str, api: str = "os", path2: str | None = None, *,
                two_paths: bool = False) -> Where:
        """Where ``path`` leads from the root directory ``top``, component by component as the kernel walks it
        (POSIX), or after Win32's textual normalisation (Windows: ``..`` is textual, trailing dots/spaces go,
        reserved and invalid names fail).

        POSIX: every component but the last must be an existing directory (ENOENT / ENOTDIR otherwise), so
        ``x/../a`` fails when ``x`` is missing and ``a/`` never names a regular file.

        ``two_paths``: a call on two paths (rename), which checks both lengths before walking either and looks up
        both last names after walking both (``check_length`` and ``check_name`` are then its business)."""
        raw = self.parts(path)
        if not two_paths:
            self.check_length(path, shown, path2, api)
        if self.sem.textual_paths:
            comps, slash = self.sem.normalize(raw, shown, api, path2)
        else:
            comps = [c for c in raw if c]
            slash = bool(comps) and raw[-1] == ""
        stack = [top]
        names: list[str] = []
        for name in comps[:-1]:
            if name == ".":
                continue
            if name == "..":
                if len(stack) > 1:
                    stack.pop()
                    names.pop()
                continue
            entry = stack[-1].entries.get(self.sem.key(name))
            if entry is None:
                self.check_name(name, shown, path2, api)
                raise self.sem.error(errno.ENOENT, shown, path2, api=api, winerror=3)
            if not entry[1].is_dir:
                raise self.sem.error(errno.ENOTDIR, shown, path2, api=api, winerror=3)
            stack.append(entry[1])
            names.append(entry[0])
        if not comps:
            return Where(None, "", "", top, ROOT, False, self.root, ())
        last = comps[-1]
        if last == "." or last == "..":
            if last == "..":
                if len(stack) > 1:
                    stack.pop()
                    names.pop()
            canon = "/".join([self.root] + names)
            kind = DOT if last == "." else DOTDOT
            return Where(None, "", "", stack[-1], kind, slash, canon, tuple(stack[:-1]))
        if self.sem.is_device(last):
            return Where(stack[-1], "", last, None, DEVICE, slash, "/".join([self.root] + names + [last]),
                         tuple(stack))
        key = self.sem.key(last)
        entry = stack[-1].entries.get(key)
        if entry is None and not two_paths:
            self.check_name(last, shown, path2, api)
        name = entry[0] if entry else last
        return Where(stack[-1], key, last, entry[1] if entry else None, NORM, slash,
                     "/".join([self.root] + names + [name]), tuple(stack))

    def check_length(self, path: str, shown: str, path2: str | None, api: str) -> None:
        """A path of PATH_MAX bytes or more fails before any lookup (ENAMETOOLONG, from the kernel's copy of it)."""
        path_max = self.sem.path_max
        if path_max is not None and len(path) * 4 >= path_max and len(os.fsencode(path)) >= path_max:
            raise self.sem.error(errno.ENAMETOOLONG, shown, path2, api=api)

    def check_name(self, name: str, shown: str, path2: str | None, api: str) -> None:
        """A name no directory holds, looked up: longer than NAME_MAX, the lookup itself fails (ENAMETOOLONG, as
        Linux's filesystems answer before saying the name is missing or creating it). Names that exist passed."""
        name_max = self.sem.name_max
        if name_max is not None and len(name) * 4 > name_max and len(os.fsencode(name)) > name_max:
            raise self.sem.error(errno.ENAMETOOLONG, shown, path2, api=api)

    def keys(self, top: Inode, path: str) -> tuple[tuple, tuple]:
        """Journal address of a canonical path: (lookup keys, display names) of its components, current case."""
        keys, names, node = [], [], top
        for name in (p for p in self.parts(path) if p):
            key = self.sem.key(name)
            entry = node.entries.get(key) if node is not None else None
            keys.append(key)
            names.append(entry[0] if entry else name)
            node = entry[1] if entry else None
        return tuple(keys), tuple(names)

    def slash_error(self, shown: str, api: str = "os", path2: str | None = None) -> OSError:
        """A regular file named with a trailing slash: ENOTDIR on POSIX; Windows rejects the name (123/EINVAL)."""
        code = errno.EINVAL if self.win else errno.ENOTDIR
        return self.sem.error(code, shown, path2, api=api, winerror=123)

    def parent_of(self, top: Inode, target: Inode) -> tuple[Inode | None, str, str]:
        """(directory holding ``target``, its key there, ``target``'s current path), found in one walk from ``top``;
        (None, "", "") when no directory holds it (removed)."""
        stack = [(top, self.root)]
        while stack:
            node, prefix = stack.pop()
            for key, (name, child) in node.entries.items():
                if child is target:
                    return node, key, f"{prefix}/{name}"
                if child.is_dir:
                    stack.append((child, f"{prefix}/{name}"))
        return None, "", ""

    def path_of(self, top: Inode, parent: Inode, key: str) -> str:
        """The current path of the entry ``key`` of directory ``parent`` (the root when no walk from ``top`` finds
        ``parent``)."""
        def find(node: Inode, prefix: str) -> str | None:
            if node is parent:
                return f"{prefix}/{parent.entries[key][0]}"
            for _k, (name, child) in node.entries.items():
                if child.is_dir:
                    hit = find(child, f"{prefix}/{name}")
                    if hit:
                        return hit
            return None

        return find(top, self.root) or self.root


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
