"""Snapshots for ``LockedAsyncCheckpointIO``: the copy of a checkpoint taken on the caller thread.

The worker writes a checkpoint later, while training goes on changing the tensors in place, so the caller copies
them first (guarantee 5). A copy can go into flat storage recycled from earlier snapshots, but only when the
wrapped IO is known to keep no reference to the tensors it wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
from lightning.fabric.plugins import TorchCheckpointIO
from lightning_utilities.core.apply_func import apply_to_collection


def storage_key(flat: torch.Tensor) -> tuple:
    """The key a flat buffer is filed under in a pool of free storage: (dtype, device, number of elements)."""
    return (flat.dtype, flat.device, flat.numel())


def snapshot(
    checkpoint: Any,
    device: Optional[torch.device],
    buffers: Optional[list[torch.Tensor]] = None,
    take_free: Optional[Callable[[tuple], Optional[torch.Tensor]]] = None,
) -> Any:
    """Copy every tensor of ``checkpoint`` (detached; onto ``device``, or each onto its own for ``None``) and rebuild
    the containers around the copies; other leaves are shared.

    With ``buffers`` (a list), plain dense tensors are copied into flat storage from ``take_free(key)`` (or newly
    allocated when it has none), and that storage is appended to ``buffers`` so it can be recycled after the write.
    """

    def copy(t: torch.Tensor) -> torch.Tensor:
        t = t.detach()
        target = t.device if device is None else device
        plain = type(t) is torch.Tensor and t.layout == torch.strided and not t.is_quantized
        if buffers is None or not plain:
            return t.clone() if target == t.device else t.to(target, copy=True)
        flat = take_free((t.dtype, target, t.numel())) if take_free is not None else None
        if flat is None:
            flat = torch.empty(t.numel(), dtype=t.dtype, device=target)
        buffers.append(flat)
        return flat.view(t.shape).copy_(t)

    return apply_to_collection(checkpoint, torch.Tensor, copy)


def keeps_no_references(io: Any) -> bool:
    """Whether ``io`` is known to serialise and forget: a plain ``TorchCheckpointIO`` whose ``save_checkpoint`` is
    not replaced (a wrapper or a Mock could keep the tensors it was given, so their storage must not be reused)."""
    return type(io) is TorchCheckpointIO and "save_checkpoint" not in vars(io)
