"""Durability: what survives a power loss (LazyFS style, see docs/fakefs.md).

  * file data is durable up to the last fsync of any handle on the file;
  * namespace operations (create, unlink, rename, mkdir, rmdir) go to an ordered journal; fsync of a directory
    commits the journal up to the last entry touching that directory (a journal commits in order);
  * at power loss the committed namespace survives, plus a prefix of the uncommitted journal chosen by the run
    (0 = none), and each file keeps its synced data (with ``torn_writes``: a chosen prefix of later writes).

The durable namespace is flat: {component keys: (display names, inode)}, one entry per reachable name.
"""

from __future__ import annotations

from typing import Any

from racecheck.fakefs.store.nodes import Inode
from racecheck.runtime import RunContract


class Durability:
    """The committed namespace, the journal of namespace operations not yet committed, and the crash plan drawn
    for the next power loss. The store calls it under its own lock; it takes no lock itself."""

    def __init__(self, root: Inode) -> None:
        self.durable: dict[tuple, tuple[tuple, Inode]] = {(): ((), root)}
        self.journal: list[tuple] = []
        self.crash_plan: tuple | None = None

    def adopt(self, other: Durability) -> None:
        """Share ``other``'s committed namespace and journal (``Store.adopt``)."""
        self.durable, self.journal = other.durable, other.journal

    def record(self, op: str, address: tuple[tuple, tuple], arg: Any, dirs: tuple[Inode, ...]) -> None:
        """Journal one namespace operation: ``op`` ("link", "unlink" or "rename") at ``address`` ((keys, names),
        see ``PathResolver.keys``), with its inode (link) or target address (rename), touching directories
        ``dirs``."""
        self.journal.append((op, address, arg, dirs))

    def commit(self, upto: int) -> None:
        """Make the first ``upto`` journal entries durable."""
        for entry in self.journal[:upto]:
            apply_entry(self.durable, entry)
        del self.journal[:upto]

    def commit_directory(self, directory: Inode) -> None:
        """fsync of a directory: the journal commits up to its last entry that touches ``directory``."""
        last = max((i for i, e in enumerate(self.journal) if any(d is directory for d in e[-1])), default=-1)
        self.commit(last + 1)

    def commit_all(self) -> None:
        self.commit(len(self.journal))

    def plan_crash(self, run: RunContract, pending: int, dirty: list[Inode], torn_writes: bool) -> None:
        """Draw, in the crashing thread, what the power loss keeps: a prefix of the ``pending`` journal entries and,
        with ``torn_writes``, how much of each dirty file's unsynced writes (``dirty``: files with unsynced writes,
        in inode order). Called without the store's lock: drawing a choice is the run's business."""
        prefix = run.choose(pending + 1, "fs.crash.journal") if pending else 0
        kept: dict[int, int] = {}
        if torn_writes:
            for node in dirty:
                kept[node.ino] = run.choose(2 * len(node.unsynced) + 1, f"fs.crash.data #{node.ino}")
        self.crash_plan = (prefix, kept)

    def survive(self) -> Inode:
        """Apply the power loss to the namespace: the root of a fresh tree holding what survives (the crash plan,
        or nothing uncommitted without one), which becomes the committed state with an empty journal."""
        prefix, kept = self.crash_plan or (0, {})
        self.crash_plan = None
        durable = dict(self.durable)
        for entry in self.journal[:prefix]:
            apply_entry(durable, entry)
        fresh: dict[int, Inode] = {}
        root = None
        for keys in sorted(durable, key=len):
            names, old = durable[keys]
            node = fresh.get(old.ino)
            if node is None:
                node = Inode(old.ino, old.is_dir, old.mtime)
                node.mode = old.mode
                node.data = bytearray(survivor(old, kept.get(old.ino, 0)))
                node.synced = bytes(node.data)
                fresh[old.ino] = node
            if not keys:
                root = node
                continue
            parent_keys = keys[:-1]
            if parent_keys in durable and durable[parent_keys][1].ino in fresh:
                fresh[durable[parent_keys][1].ino].entries[keys[-1]] = (names[-1], node)
        self.journal.clear()
        self.durable = {}
        self._rebuild(root, (), ())
        return root

    def _rebuild(self, node: Inode, keys: tuple, names: tuple) -> None:
        self.durable[keys] = (names, node)
        for key, (name, child) in node.entries.items():
            self._rebuild(child, keys + (key,), names + (name,))


def sync_data(node: Inode) -> None:
    """fsync of a file: its data becomes durable."""
    node.synced = bytes(node.data)
    node.unsynced.clear()


def apply_entry(durable: dict, entry: tuple) -> None:
    """Replay one journal entry on a flat {keys: (names, inode)} namespace."""
    op, (keys, names), arg, _dirs = entry
    if op == "link":
        durable[keys] = (names, arg)
    elif op == "unlink":
        durable.pop(keys, None)
    elif op == "rename":
        dkeys, dnames = arg
        n = len(keys)
        if dkeys == keys:  # case-only rename: same entry, new display name
            if keys in durable:
                durable[keys] = (dnames, durable[keys][1])
            return
        for k in [k for k in durable if k[:len(dkeys)] == dkeys]:
            del durable[k]
        for k in [k for k in durable if k[:n] == keys]:
            knames, node = durable.pop(k)
            durable[dkeys + k[n:]] = (dnames + knames[n:], node)


def survivor(node: Inode, kept: int) -> bytes:
    """Synced data plus, with torn writes, the first kept//2 unsynced writes and half of the next if kept is odd."""
    if node.is_dir:
        return b""
    if kept >= 2 * len(node.unsynced):
        return bytes(node.data)
    data = bytearray(node.synced)
    for i, op in enumerate(node.unsynced[: (kept + 1) // 2]):
        torn = kept % 2 == 1 and i == kept // 2
        if op[0] == "t":
            if not torn:
                del data[op[1]:]
            continue
        _tag, pos, chunk = op
        if torn:
            chunk = chunk[: len(chunk) // 2]
        if pos > len(data):
            data.extend(b"\0" * (pos - len(data)))
        data[pos:pos + len(chunk)] = chunk
    return bytes(data)


__racecheck_engine__ = True  # the fake is part of the engine: never instrumented itself
