"""What a checkpoint manager is, for the catalogue: the contract its scenarios drive, and the checks its oracles make.

Why a contract of its own: the races of 2025-2026 (Megatron-Bridge, SkyRL, KempnerForge; see
docs/checkpoint-managers.md) are not in a CheckpointIO's calls but one level up, where a manager pairs an async
save with a tracker (``latest``, ``latest_checkpointed_iteration.txt``, a symlink) and a retention policy
(``keep_last_n``). A target that satisfies ``CheckpointManager`` runs through every ``takes="manager"`` scenario.

The layout is declared, not guessed: ``tracker_file`` names the tracker inside the manager's directory,
``tracked(text)`` maps its text to the checkpoint directory it names, and ``complete_marker`` is the file every
complete checkpoint holds, written last (DCP's ``.metadata``). The instant check reads those through the fake
store directly (``tracked_checkpoint``): no scheduling point, so no other thread moves while it looks.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class CheckpointManager(Protocol):
    """A checkpoint manager as the scenarios drive it (one rank; ``docs/checkpoint-managers.md``).

    Built as ``Manager(directory, keep_last_n=N)``. ``save`` may return at once (the write going on in the
    background) and returns a handle (a Future, or None); ``finalize`` waits for every save in flight, runs what
    each save defers (tracker, retention) and raises the first error of a save; ``resume`` is what a restarted job
    calls: ``(step, state)`` of the checkpoint the tracker names, or None when there is no tracker; ``close``
    finalizes and releases every thread the manager started.
    """

    tracker_file: str
    complete_marker: str

    def __init__(self, directory: str, keep_last_n: int = 1) -> None: ...

    @staticmethod
    def tracked(text: str) -> str:
        """The name (in the manager's directory) of the checkpoint the tracker's text names."""
        ...

    def save(self, step: int, state: dict[str, Any]) -> Any: ...

    def finalize(self) -> None: ...

    def resume(self) -> tuple[int, dict[str, Any]] | None: ...

    def close(self) -> None: ...


def state(step: int, size: int = 4) -> dict[str, Any]:
    """A training state whose every tensor encodes its step, so a torn, stale or mixed checkpoint shows."""
    import torch

    return {"step": step, "model": {"w": torch.full((size,), float(step))}}


def consistent_step(resumed: Any) -> int:
    """The step of a ``resume()`` result; AssertionError when it is malformed or its tensor holds another step."""
    if not (isinstance(resumed, tuple) and len(resumed) == 2):
        raise AssertionError(f"resume() returned {resumed!r}, not (step, state)")
    step, loaded = resumed
    weights = loaded.get("model", {}).get("w") if isinstance(loaded, dict) else None
    if not isinstance(step, int) or loaded.get("step") != step or weights is None or not bool(
            (weights == float(step)).all()):
        raise AssertionError(f"resume() returned an inconsistent checkpoint (step {step!r})")
    return step


def rank_state(step: int, rank: int, size: int = 4) -> dict[str, Any]:
    """Rank ``rank``'s part of a training state on several ranks: the step, and a tensor of its own that encodes
    it (a resume that misses a rank's part, or mixes steps, shows)."""
    import torch

    return {"step": step, f"rank{rank}": {"w": torch.full((size,), float(step))}}


def consistent_ranks(resumed: Any, world_size: int) -> int:
    """The step of a ``resume()`` of a checkpoint ``world_size`` ranks made; AssertionError when a rank's part is
    missing or holds another step."""
    if not (isinstance(resumed, tuple) and len(resumed) == 2 and isinstance(resumed[1], dict)):
        raise AssertionError(f"resume() returned {resumed!r}, not (step, state)")
    step, loaded = resumed
    for rank in range(world_size):
        weights = (loaded.get(f"rank{rank}") or {}).get("w")
        if loaded.get("step") != step or weights is None or not bool((weights == float(step)).all()):
            raise AssertionError(f"resume() returned an inconsistent checkpoint (step {step!r}): rank {rank}'s part "
                                 "is missing or holds another step")
    return step


def tracked_checkpoint(manager_class: type, directory: str, world_size: int = 1,
                       store: Any = None) -> tuple[str, str] | None:
    """(tracker text, why) when the tracker names a checkpoint that is not complete right now; None when it names a
    complete one or there is no tracker. Reads the run's fake store directly, without a scheduling point. On
    ``world_size`` ranks a checkpoint is complete when every rank's part (``<checkpoint>/rank_<r>/``) holds the
    complete marker. ``store``: the run's store (default: the calling thread's)."""
    from racecheck import fakefs

    store = store if store is not None else fakefs.current_store()
    raw = store.read_bytes(f"{directory}/{manager_class.tracker_file}")
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace").strip()
    try:
        name = manager_class.tracked(text)
    except Exception as exc:  # noqa: BLE001 - a tracker the manager itself cannot read is a broken tracker
        return text, f"the tracker's text does not parse ({type(exc).__name__}: {exc})"
    parts = [name] if world_size == 1 else [f"{name}/rank_{r}" for r in range(world_size)]
    for part in parts:
        if store.read_bytes(f"{directory}/{part}/{manager_class.complete_marker}") is None:
            if not any(path.startswith(f"{directory}/{part}/") for path, _size, _hash in store.files()):
                return text, f"{part} holds no file (missing, or not written yet)"
            return text, f"{part} has no {manager_class.complete_marker} (incomplete)"
    return None
