"""The failure database: failing tokens kept per test, replayed first on the next run (Hypothesis's example database).

A race found once is worth finding again at once: after a fix, the next exploration starts with the schedules that
failed before, so a regression shows on schedule 0 instead of after however many schedules it took to find.

Layout: ``<root>/<key>/<digest>`` where ``key`` is 16 hex of sha256 of the test's name and the options that change
behaviour (the token's target and config fields say the same, shorter), and each file holds one token. Files are
written to a temporary name in the same folder and moved into place (``os.replace``), so a reader in another
process sees a whole token or none; an entry that does not decode, or whose schedule now passes, is deleted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

__racecheck_engine__ = True

DEFAULT_ROOT = ".racecheck"


def _digest(text: str, width: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:width]


class FailureDatabase:
    """Tokens per test key under ``root``; every method is a no-op on an unusable folder (never fails a test)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)

    def _folder(self, key: str) -> str:
        return os.path.join(self.root, _digest(key))

    def fetch(self, key: str) -> list[str]:
        """The tokens kept for ``key``, in a deterministic order (by file name)."""
        folder = self._folder(key)
        try:
            names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        except OSError:
            return []
        tokens = []
        for name in names:
            try:
                with open(os.path.join(folder, name), encoding="ascii") as handle:
                    text = handle.read().strip()
            except (OSError, UnicodeDecodeError):
                continue
            if text:
                tokens.append(text)
        return tokens

    def save(self, key: str, token: str) -> None:
        """Keep ``token`` for ``key`` (idempotent); written atomically."""
        folder = self._folder(key)
        target = os.path.join(folder, _digest(token))
        if os.path.exists(target):
            return
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
            try:
                with os.fdopen(fd, "w", encoding="ascii") as handle:
                    handle.write(token + "\n")
                os.replace(tmp, target)
            except BaseException:
                _unlink(tmp)
                raise
        except OSError:
            return

    def delete(self, key: str, token: str) -> None:
        _unlink(os.path.join(self._folder(key), _digest(token)))


def _unlink(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
