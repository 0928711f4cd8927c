"""Dataclass default factories (``field(default_factory=threading.Lock)``) made the stand-ins for an exploration.

A dataclass captures its factory when the class is defined: ``dataclasses`` keeps it on the field
(``Field.default_factory``) and in a closure cell of the ``__init__`` it generates, which calls it. Swapping module
globals never reaches either, so every instance made during a run got a real lock, "made before the run" though it
was made by the code under test in the middle of it (issue 49). For every dataclass defined in a module control by
default reaches, a factory that *is* a real object of the swaps (``threading.Lock``, ``RLock``, ``Event``,
``queue.Queue``, ...) is replaced, on the field and in the ``__init__`` cell, by its stand-in, which decides at call
time: a controlled thread gets a controlled primitive, any other thread a real one. ``restore`` undoes it exactly.

Which classes of a module are dataclasses with such a factory is remembered per module while its globals keep
their size, so an exploration after the first walks only modules that changed.
"""

from __future__ import annotations

from typing import Any

__racecheck_engine__ = True

# id(module globals) -> (their size then, the dataclasses defined there that have a default factory)
_found: dict[int, tuple[int, tuple[type, ...]]] = {}


def _with_factories(namespace: dict) -> tuple[type, ...]:
    """The dataclasses defined in the module of ``namespace`` (not imported into it) with a default factory."""
    entry = _found.get(id(namespace))
    size = len(namespace)
    if entry is not None and entry[0] == size:
        return entry[1]
    name = namespace.get("__name__")
    classes = []
    for value in list(namespace.values()):
        # read through the class's own dict: a module's odd objects (deprecation proxies) warn when asked more
        if not issubclass(type(value), type) or value.__dict__.get("__module__") != name:
            continue
        fields = value.__dict__.get("__dataclass_fields__")
        if isinstance(fields, dict) and any(
                callable(getattr(field, "default_factory", None)) for field in fields.values()):
            classes.append(value)
    found = tuple(classes)
    _found[id(namespace)] = (size, found)
    return found


def swap(namespaces: list[dict], swaps: dict[int, tuple[Any, Any]], saved: list[tuple[Any, str, Any]]) -> int:
    """Replace the real factories of the dataclasses of ``namespaces`` by their stand-ins, each change recorded in
    ``saved`` as ``(owner, attribute, original)`` for ``restore``; how many factories were replaced."""
    done: dict[int, Any] = {}  # id(Field) -> its real factory: a subclass shares its base's Field objects
    count = 0
    for namespace in namespaces:
        for cls in _with_factories(namespace):
            cells = getattr(cls.__dict__.get("__init__"), "__closure__", None) or ()
            for field in cls.__dict__["__dataclass_fields__"].values():
                real = done.get(id(field), getattr(field, "default_factory", None))
                entry = swaps.get(id(real))
                if entry is None or entry[0] is not real:
                    continue
                if id(field) not in done:
                    done[id(field)] = real
                    saved.append((field, "default_factory", real))
                    field.default_factory = entry[1]
                for cell in cells:
                    try:
                        held = cell.cell_contents
                    except ValueError:  # an empty cell
                        continue
                    if held is real:
                        saved.append((cell, "cell_contents", real))
                        cell.cell_contents = entry[1]
                count += 1
    return count


def restore(saved: list[tuple[Any, str, Any]]) -> None:
    """Undo ``swap``: the originals back, last change first."""
    for owner, attribute, original in reversed(saved):
        setattr(owner, attribute, original)
    saved.clear()
