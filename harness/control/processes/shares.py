"""Resources of the parent's run that every process of the run shares, each served by the parent: the fake
filesystem (``fs=``) is the one today. A layer above this one (the fake filesystem's) registers a ``Share``; this
module only carries it across, so the control layer never imports the provider.

A child of the run gets, in the setting its proxy sends with "go", the share's stand-in for the resource
(``Share.for_child``: picklable, for spawn; a forked child would otherwise keep a dead copy of the parent's object),
put where the child's code looks for the resource (``run.resources[key]``). Its every operation is a request
("share", key, method, args, kwargs, line) that the proxy performs on the parent's resource (``Share.serve``), on
the proxy thread, so it is a point of the child's thread with the accesses the parent's own call would have. When
the child ends, ``Share.release`` lets go of what it held (what the OS does for a process at its exit).
"""

from __future__ import annotations

from typing import Any, Protocol

from racecheck.control.processes import link
from racecheck.runtime import RunContract

__racecheck_engine__ = True


class Share(Protocol):
    """What a provider registers for one of the run's resources."""

    def for_child(self, resource: Any, label: str) -> Any:
        """The picklable stand-in a child ``label`` uses in place of ``resource``."""

    def serve(self, run: RunContract, resource: Any, label: str, method: str, args: tuple, kwargs: dict) -> Any:
        """Perform the child's call on ``resource`` (on its proxy thread); the answer the child gets."""

    def release(self, run: RunContract, resource: Any, label: str) -> None:
        """The child ended: what it still held goes, as at a real process's exit."""


SHARES: dict[str, Share] = {}  # run.resources key -> its share, registered by the provider when it activates


def register(key: str, share: Share) -> None:
    SHARES[key] = share


def for_child(run: RunContract, label: str) -> dict[str, Any]:
    """The run's shared resources as child ``label`` holds them (empty when the run has none)."""
    return {key: share.for_child(run.resources[key], label) for key, share in SHARES.items()
            if run.resources.get(key) is not None}


def serve(run: RunContract, label: str, message: tuple) -> Any:
    """In the parent, on the child's proxy thread: a share request of the child's."""
    _, key, method, args, kwargs = message[:5]
    return SHARES[key].serve(run, run.resources[key], label, method, args, kwargs)


def release(run: RunContract, label: str) -> None:
    """In the parent, when child ``label`` has ended (whatever way)."""
    for key, share in SHARES.items():
        resource = run.resources.get(key)
        if resource is not None:
            share.release(run, resource, label)


def request(key: str, method: str, *args: Any, **kwargs: Any) -> Any:
    """In a child: ``method`` of the parent's resource ``key``, performed by the proxy. Raises what it raised."""
    channel = link.LINK
    if channel is None:
        raise RuntimeError(f"racecheck: {key} of the parent's run used outside a child of the run")
    return channel.request(("share", key, method, args, kwargs, link.caller_line()))
