"""Schedule tokens: a compact, versioned, copy-pasteable string that replays one schedule exactly.

Layout: ``rc1.<strategy>.<seed>.<index>.<target>.<config>.<shape>.<choices>[.<modules>].<check>``

* ``rc1``       format version; anything else is refused.
* strategy/seed/index say where the schedule came from (for humans and for reruns of the same exploration).
* target        4 hex of sha256(module.qualname) of the test function, so a token pasted into the wrong test is
                refused instead of replaying nonsense.
* config        4 hex of sha256 of the options that change behaviour (e.g. the fake filesystem's spec).
* shape         ``<decisions>x<4 hex>``: how many decisions the run made and a hash of how many options each had,
                so a replay that takes another path (nondeterminism outside control) is detected, not trusted.
* choices       base64url(zlib(varints)): the choice stream (choices past its end default to 0), then for every
                decision of the run which thread it picked (T<n> as n+1, 0 for a drawn value) and at which step,
                and the run's last step, so a replay that takes another path says where: the step, the thread the
                token expected and what ran instead.
* modules       only when the run began with modules under memory watch that the warm-up had not reached (an
                earlier schedule of the exploration brought them): base64url(zlib(their names, one per line)). A
                replay brings them under watch after its warm-up, so its run watches what the recorded run watched
                (which code a run watches decides its steps; what an exploration's earlier schedules reached is
                not something a replay can redo).
* check         8 hex of sha256 over everything before it, so a truncated or edited token is caught.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import re
import types
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from racecheck.errors import TokenError

__racecheck_engine__ = True

VERSION = "rc1"
_FIELD = re.compile(r"^[A-Za-z0-9_-]*$")


def short_hash(text: str, width: int = 4) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:width]


def _varints(values: list[int]) -> bytes:
    out = bytearray()
    for value in values:
        if value < 0:
            raise ValueError("token values are non-negative")
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return bytes(out)


def _encode_payload(choices: list[int], picked: list[int], steps: list[int]) -> str:
    deltas = [b - a for a, b in zip([0, *steps], steps, strict=False)]
    packed = zlib.compress(_varints([len(choices), *choices, len(picked), *picked, *deltas]), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def _decode_payload(text: str) -> tuple[list[int], list[int], list[int]]:
    try:
        padded = text + "=" * (-len(text) % 4)
        raw = zlib.decompress(base64.urlsafe_b64decode(padded.encode("ascii")))
    except Exception:
        raise TokenError("malformed token: the choice payload does not decode") from None
    values: list[int] = []
    value = shift = 0
    for byte in raw:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
        else:
            values.append(value)
            value = shift = 0
    truncated = TokenError("malformed token: the choice payload is truncated")
    if shift or not values:
        raise truncated
    count = values[0]
    choices = values[1 : 1 + count]
    rest = values[1 + count :]
    if len(choices) != count or not rest:
        raise truncated
    count = rest[0]
    picked, deltas = rest[1 : 1 + count], rest[1 + count :]
    if len(picked) != count or len(deltas) not in (0, count + 1):
        raise truncated
    steps, total = [], 0
    for delta in deltas:
        total += delta
        steps.append(total)
    return choices, picked, steps


def _encode_modules(modules: tuple[str, ...]) -> str:
    packed = zlib.compress("\n".join(modules).encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def _decode_modules(text: str) -> tuple[str, ...]:
    try:
        padded = text + "=" * (-len(text) % 4)
        names = zlib.decompress(base64.urlsafe_b64decode(padded.encode("ascii"))).decode("utf-8").split("\n")
    except Exception:
        raise TokenError("malformed token: the watched-modules field does not decode") from None
    if not all(part.isidentifier() for name in names for part in name.split(".")):
        raise TokenError("malformed token: the watched-modules field holds something other than module names")
    return tuple(names)


@dataclass(frozen=True)
class Token:
    strategy: str
    seed: int
    index: int
    target: str
    config: str
    shape: str
    choices: tuple[int, ...]
    picked: tuple[int, ...] = ()  # per decision: the thread that ran (tid + 1) or 0 for a drawn value
    steps: tuple[int, ...] = ()  # the step of every decision, then the run's last step (len(picked) + 1 values)
    modules: tuple[str, ...] = ()  # watched as the run began, beyond what the warm-up brought under watch

    def encode(self) -> str:
        body = ".".join(
            [
                VERSION,
                self.strategy,
                str(self.seed),
                str(self.index),
                self.target,
                self.config,
                self.shape,
                _encode_payload(list(self.choices), list(self.picked), list(self.steps)),
                *([_encode_modules(self.modules)] if self.modules else []),
            ]
        )
        return f"{body}.{short_hash(body, 8)}"

    def __str__(self) -> str:
        return self.encode()


def decode(text: object) -> Token:
    """Parse a token, with a one-line reason for anything that is not a valid rc1 token."""
    if not isinstance(text, str):
        raise TokenError(f"malformed token: expected a string, got {type(text).__name__}")
    text = text.strip()
    parts = text.split(".")
    if not parts or not parts[0].startswith("rc"):
        raise TokenError("not a racecheck token (it should start with 'rc1.')")
    if parts[0] != VERSION:
        raise TokenError(f"unsupported token version {parts[0]!r} (this racecheck reads {VERSION!r})")
    if len(parts) not in (9, 10):
        raise TokenError(f"malformed token: expected 9 or 10 dot-separated fields, got {len(parts)}")
    version, strategy, seed, index, target, config, shape, payload, *watched, check = parts
    if not all(_FIELD.match(p) for p in parts):
        raise TokenError("malformed token: unexpected characters")
    body = ".".join(parts[:-1])
    if short_hash(body, 8) != check:
        raise TokenError("corrupted token: checksum mismatch (was it truncated or edited?)")
    try:
        seed_value, index_value = int(seed), int(index)
    except ValueError:
        raise TokenError("malformed token: seed and index must be integers") from None
    choices, picked, steps = _decode_payload(payload)
    modules = _decode_modules(watched[0]) if watched else ()
    return Token(strategy, seed_value, index_value, target, config, shape, tuple(choices), tuple(picked), tuple(steps),
                 modules)


def shape_of(arities: list[int]) -> str:
    return f"{len(arities)}x{short_hash(','.join(map(str, arities)), 4)}"


def target_of(module: str, qualname: str) -> str:
    """The token's target field for the test function ``module.qualname``."""
    return short_hash(f"{module}.{qualname}")


def owner_in(target: str, modules: Iterable[types.ModuleType | None]) -> str | None:
    """The ``module.qualname`` of the one function defined in ``modules`` (at top level, or a method of a top-level
    class) whose token target is ``target``, so an error can say whose token it is; None when none or several
    match (the target is a 4-hex hash: searching only where the test was expected keeps a false match unlikely)."""
    found: set[str] = set()
    for module in modules:
        if module is None:
            continue
        for value in list(vars(module).values()):
            candidates = [value]
            if inspect.isclass(value) and value.__module__ == module.__name__:
                candidates.extend(vars(value).values())
            for candidate in candidates:
                candidate = getattr(candidate, "__func__", candidate)
                if not inspect.isfunction(candidate) or candidate.__module__ != module.__name__:
                    continue
                if target_of(candidate.__module__, candidate.__qualname__) == target:
                    found.add(f"{candidate.__module__}.{candidate.__qualname__}")
    return found.pop() if len(found) == 1 else None
