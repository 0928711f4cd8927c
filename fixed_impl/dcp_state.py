"""Reading a ``torch.distributed.checkpoint`` directory back without knowing its shape in advance.

Why: ``dcp.load`` fills a state dict the caller shapes; a resume knows only the directory. The template is built
from the checkpoint's own ``.metadata`` (tensors as empty tensors of the saved size and dtype, other values as
placeholders DCP replaces), so any state a manager saved reads back as it was saved. One process, no process
group: DCP warns that ``torch.distributed`` is uninitialised and runs on its own rank, as meant here.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

#: The file DCP writes last (through a temp name): a directory without it is not a complete checkpoint.
METADATA = ".metadata"


def template(path: str) -> dict[str, Any]:
    """A state dict shaped like the checkpoint at ``path``, for ``dcp.load`` to fill in."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    metadata = dcp.FileSystemReader(path).read_metadata()
    state: dict[str, Any] = {}
    for key, item in metadata.state_dict_metadata.items():
        where = metadata.planner_data.get(key, (key,)) if metadata.planner_data else (key,)
        node = state
        for part in where[:-1]:
            node = node.setdefault(part, {})
        node[where[-1]] = torch.empty(item.size, dtype=item.properties.dtype) if isinstance(
            item, TensorStorageMetadata) else None
    return state


def load(path: str) -> dict[str, Any]:
    """The state saved at ``path``; FileNotFoundError when the directory or its ``.metadata`` is missing."""
    import torch.distributed.checkpoint as dcp

    if not os.path.isfile(os.path.join(path, METADATA)):
        raise FileNotFoundError(f"{path} has no {METADATA}: not a complete checkpoint")
    state = template(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(state, checkpoint_id=path)
    return state


def async_save(state: dict[str, Any], path: str, no_dist: bool = False, sync_files: bool = True) -> Any:
    """``dcp.async_save`` of ``state`` into ``path`` on DCP's thread-based executor; its Future. ``no_dist``: this
    rank's part alone, with no collective (a rank's part of a checkpoint several ranks make, ``rank_layout``).
    ``sync_files=False``: DCP's ``FileSystemWriter`` does not fsync (for a caller that fsyncs the whole
    checkpoint itself before it counts as written; DCP's filesystem module then makes no descriptor call)."""
    import torch.distributed.checkpoint as dcp

    options: dict[str, Any] = {"no_dist": True} if no_dist else {}
    if not sync_files:
        options["storage_writer"] = dcp.FileSystemWriter(path, sync_files=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "torch.distributed is uninitialised": a one-process save, as meant
        return dcp.async_save(state, checkpoint_id=path, **options)


#: What a dpor proof over DCP's thread-based async_save keeps real (``exclude=``): DCP's filesystem writer, whose
#: two queues (the files to write, the results) are made, filled and drained by the one thread that runs the save
#: (``thread_count=1``, the default) and reach no other thread, while its every file operation still goes through
#: the fake filesystem (pathlib's). Controlled, each drain ends in a failed ``get_nowait``, a yield, which
#: conflicts with every step of every other thread: most of dpor's space. Only for savers with ``sync_files=False``
#: (a module kept real calls the real ``os.fsync`` on the fake filesystem's descriptor).
PROOF_EXCLUDE = ["torch.distributed.checkpoint.filesystem"]


#: The modules a manager over DCP's thread-based async_save should have racecheck instrument explicitly: the
#: executor each save runs on, the writes, the saver and the loader.
DCP_MODULES = [
    "torch.distributed.checkpoint._async_thread_executor",
    "torch.distributed.checkpoint.filesystem",
    "torch.distributed.checkpoint.state_dict_saver",
    "torch.distributed.checkpoint.state_dict_loader",
]
