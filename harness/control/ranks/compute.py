"""What a collective gives each rank, computed in the parent from every rank's inputs with torch's own ops.

The ranks' collectives are a model (``racecheck.control.ranks``), so their results are computed here, once every
rank of the group has entered: ``compute(name, match, inputs)`` takes the inputs of each rank in group order (dicts
of tensors, pickled objects, lists of them) and gives each rank's outputs in the same order. A reduction folds the
ranks' tensors left to right in the tensor's own dtype, as gloo does for integers; for floats gloo's ring may add
in another order (last-bit differences), which the differential test avoids by using integral values.
``tests/ranks/test_differential.py`` holds this against real gloo on generated programs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__racecheck_engine__ = True


def _fold(op: str) -> Callable[[Any, Any], Any]:
    import torch

    folds = {
        "SUM": torch.add, "PRODUCT": torch.mul, "MIN": torch.minimum, "MAX": torch.maximum,
        "BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor,
    }
    fold = folds.get(op)
    if fold is None:
        raise ValueError(f"racecheck: reduce op {op} is not supported by the gloo model")
    return fold


def reduced(op: str, tensors: list[Any]) -> Any:
    """The ranks' tensors reduced with ``op``, in the first one's dtype and shape. ``AVG`` divides the sum in
    place, so on integers it raises what gloo raises (a float result cannot be cast to Long)."""
    fold = _fold("SUM" if op == "AVG" else op)
    out = tensors[0].clone()
    for tensor in tensors[1:]:
        out = fold(out, tensor).to(out.dtype)
    if op == "AVG":
        out.div_(len(tensors))
    return out


def _broadcast(match: dict, inputs: list[dict]) -> list[dict]:
    value = inputs[match["src"]]["tensor"]
    return [{"tensor": value} for _ in inputs]


def _all_reduce(match: dict, inputs: list[dict]) -> list[dict]:
    value = reduced(match["op"], [i["tensor"] for i in inputs])
    return [{"tensor": value} for _ in inputs]


def _reduce(match: dict, inputs: list[dict]) -> list[dict]:
    value = reduced(match["op"], [i["tensor"] for i in inputs])
    return [{"tensor": value} if r == match["dst"] else {} for r in range(len(inputs))]


def _all_gather(match: dict, inputs: list[dict]) -> list[dict]:
    values = [i["tensor"] for i in inputs]
    return [{"list": values} for _ in inputs]


def _all_gather_into_tensor(match: dict, inputs: list[dict]) -> list[dict]:
    import torch

    value = torch.cat([i["tensor"] for i in inputs])
    return [{"tensor": value} for _ in inputs]


def _gather(match: dict, inputs: list[dict]) -> list[dict]:
    values = [i["tensor"] for i in inputs]
    return [{"list": values} if r == match["dst"] else {} for r in range(len(inputs))]


def _scatter(match: dict, inputs: list[dict]) -> list[dict]:
    values = inputs[match["src"]]["list"]
    if values is None or len(values) != len(inputs):
        raise ValueError("racecheck: scatter's source must give one tensor per rank of the group")
    return [{"tensor": values[r]} for r in range(len(inputs))]


def _reduce_scatter(match: dict, inputs: list[dict]) -> list[dict]:
    n = len(inputs)
    if any(len(i["list"]) != n for i in inputs):
        raise ValueError("racecheck: reduce_scatter needs one input tensor per rank of the group")
    return [{"tensor": reduced(match["op"], [i["list"][r] for i in inputs])} for r in range(n)]


def _reduce_scatter_tensor(match: dict, inputs: list[dict]) -> list[dict]:
    n = len(inputs)
    chunks = [list(i["tensor"].chunk(n)) for i in inputs]
    return [{"tensor": reduced(match["op"], [c[r] for c in chunks])} for r in range(n)]


def _nothing(match: dict, inputs: list[dict]) -> list[dict]:
    return [{} for _ in inputs]


def _objects_to_all(match: dict, inputs: list[dict]) -> list[dict]:
    values = [i["object"] for i in inputs]
    return [{"objects": values} for _ in inputs]


def _objects_to_dst(match: dict, inputs: list[dict]) -> list[dict]:
    values = [i["object"] for i in inputs]
    return [{"objects": values} if r == match["dst"] else {} for r in range(len(inputs))]


def _object_list_from_src(match: dict, inputs: list[dict]) -> list[dict]:
    values = inputs[match["src"]]["objects"]
    return [{"objects": values} for _ in inputs]


def _objects_scattered(match: dict, inputs: list[dict]) -> list[dict]:
    values = inputs[match["src"]]["objects"]
    if values is None or len(values) != len(inputs):
        raise ValueError("racecheck: scatter_object_list's source must give one object per rank of the group")
    return [{"objects": [values[r]]} for r in range(len(inputs))]


COMPUTE: dict[str, Callable[[dict, list[dict]], list[dict]]] = {
    "broadcast": _broadcast, "all_reduce": _all_reduce, "reduce": _reduce, "all_gather": _all_gather,
    "all_gather_into_tensor": _all_gather_into_tensor, "gather": _gather, "scatter": _scatter,
    "reduce_scatter": _reduce_scatter, "reduce_scatter_tensor": _reduce_scatter_tensor, "barrier": _nothing,
    "monitored_barrier": _nothing, "new_group": _nothing, "all_gather_object": _objects_to_all,
    "gather_object": _objects_to_dst, "broadcast_object_list": _object_list_from_src,
    "scatter_object_list": _objects_scattered,
}


def compute(name: str, match: dict, inputs: list[dict]) -> list[dict]:
    """Each rank's outputs of collective ``name`` (``match``: what every rank agreed on, src/dst as group ranks)."""
    return COMPUTE[name](match, inputs)
