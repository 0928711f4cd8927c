"""CLI tokens: everything ``racecheck replay TOKEN`` needs to re-run one failing schedule, in one string.

An engine token (``rc1.…``) replays a schedule of a test function the caller already has in hand. On the command
line nobody has the function: the token must also say which scenario, which target, which file-system semantics
and which extra instrumented modules built it. Layout::

    rcc1.<scenario>.<semantics>.<payload>.<check>

* ``rcc1``       format version; anything else is refused with a one-line reason.
* scenario and semantics are repeated in clear so a person can read what the token is about.
* payload        base64url(zlib(JSON)) of ``{"v", "scenario", "fs", "target", "instrument", "catalogue",
                 "index", "token"}``: ``token`` is the engine token, ``index`` the schedule's global index in the
                 CLI exploration (see racecheck.frontends.parallel); and ``"options"`` when the exploration set
                 Config options a replay needs too (``racecheck explore --max-steps 500``, ``--no-memory``): a
                 JSON object of Config field names and plain values, absent when there are none.
* check          8 hex of sha256 over everything before it: a truncated or edited token is caught before anything
                 is imported or run.

Decoding is defensive: size limits on the text and on the decompressed payload (no zip bomb can hang it), strict
types for every field, and every problem is a :class:`racecheck.TokenError` with one line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import zlib
from dataclasses import dataclass

from racecheck.config import FIELD_NAMES
from racecheck.errors import TokenError
from racecheck.search.tokens import decode as decode_engine_token

__racecheck_engine__ = True

VERSION = "rcc1"
MAX_TOKEN_CHARS = 65536
MAX_PAYLOAD_BYTES = 262144
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_B64 = re.compile(r"^[A-Za-z0-9_-]+$")
_HEX8 = re.compile(r"^[0-9a-f]{8}$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_FIELDS = {"v", "scenario", "fs", "target", "instrument", "catalogue", "index", "token"}
# Config options that only steer the search: a replay takes its one schedule from the token and needs none of them.
SEARCH_ONLY = frozenset({"strategy", "schedules", "seed", "depth", "preemption_bound", "shrink_budget",
                         "max_failures", "race_budget", "skip_duplicates", "database", "progress"})


def replay_options(options: object) -> tuple[tuple[str, object], ...]:
    """The options of an exploration a replay of its tokens needs: plain values, search-only ones left out."""
    items = options.items() if isinstance(options, dict) else options
    kept = [(name, tuple(value) if isinstance(value, list) else value) for name, value in items
            if name not in SEARCH_ONLY and _plain(value)]
    return tuple(sorted(kept, key=lambda item: item[0]))


def _plain(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, str) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


@dataclass(frozen=True)
class CliToken:
    scenario: str
    fs: str
    target: str
    engine_token: str
    index: int
    instrument: tuple[str, ...] = ()
    catalogue: str | None = None  # None: racecheck.scenarios
    options: tuple[tuple[str, object], ...] = ()  # Config options the replay needs (see replay_options)

    def encode(self) -> str:
        for label, value in (("scenario", self.scenario), ("semantics", self.fs)):
            if not _NAME.match(value):
                raise ValueError(f"{label} name {value!r} cannot be written into a token")
        data = {
            "v": 1,
            "scenario": self.scenario,
            "fs": self.fs,
            "target": self.target,
            "instrument": list(self.instrument),
            "catalogue": self.catalogue,
            "index": self.index,
            "token": self.engine_token,
        }
        if self.options:
            data["options"] = {name: list(v) if isinstance(v, tuple) else v for name, v in self.options}
        raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")
        payload = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")
        body = f"{VERSION}.{self.scenario}.{self.fs}.{payload}"
        return f"{body}.{_check(body)}"

    def __str__(self) -> str:
        return self.encode()


def _check(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:8]


def _inflate(payload: str) -> bytes:
    try:
        packed = base64.urlsafe_b64decode((payload + "=" * (-len(payload) % 4)).encode("ascii"))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_PAYLOAD_BYTES)
    except (binascii.Error, ValueError, zlib.error):
        raise TokenError("malformed token: the payload does not decode") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise TokenError("malformed token: the payload is truncated or too large")
    return raw


def decode(text: object) -> CliToken:
    """Parse a CLI token; anything else raises TokenError with a one-line reason."""
    if not isinstance(text, str):
        raise TokenError(f"malformed token: expected a string, got {type(text).__name__}")
    text = text.strip()
    if len(text) > MAX_TOKEN_CHARS:
        raise TokenError(f"malformed token: longer than {MAX_TOKEN_CHARS} characters")
    if text.startswith("rc1."):
        raise TokenError(
            "this is an engine token (rc1.): replay it with racecheck.replay(fn, token); "
            "`racecheck replay` takes the rcc1. token that `racecheck run` prints"
        )
    parts = text.split(".")
    if not parts[0].startswith("rcc"):
        raise TokenError("not a racecheck CLI token (it should start with 'rcc1.')")
    if parts[0] != VERSION:
        raise TokenError(f"unsupported CLI token version {parts[0][:20]!r} (this racecheck reads {VERSION!r})")
    if len(parts) != 5:
        raise TokenError(f"malformed token: expected 5 dot-separated fields, got {len(parts)}")
    _, scenario, fs, payload, check = parts
    if not (_NAME.match(scenario) and _NAME.match(fs) and _B64.match(payload) and _HEX8.match(check)):
        raise TokenError("malformed token: unexpected characters")
    if _check(".".join(parts[:-1])) != check:
        raise TokenError("corrupted token: checksum mismatch (was it truncated or edited?)")
    raw = _inflate(payload)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise TokenError("malformed token: the payload is not JSON") from None
    return _validate(data, scenario, fs)


def _validate(data: object, scenario: str, fs: str) -> CliToken:
    if not isinstance(data, dict) or set(data) - {"options"} != _FIELDS or data["v"] != 1:
        raise TokenError("malformed token: unexpected payload fields")
    if data["scenario"] != scenario or data["fs"] != fs:
        raise TokenError("malformed token: the payload does not match the scenario/semantics it names")
    target, instrument, catalogue, index, engine = (
        data["target"], data["instrument"], data["catalogue"], data["index"], data["token"]
    )
    if not isinstance(target, str) or not 0 < len(target) <= 500:
        raise TokenError("malformed token: bad target")
    if not isinstance(instrument, list) or not all(isinstance(m, str) and _MODULE.match(m) for m in instrument):
        raise TokenError("malformed token: bad instrument list")
    if catalogue is not None and not (isinstance(catalogue, str) and _MODULE.match(catalogue)):
        raise TokenError("malformed token: bad catalogue module")
    if type(index) is not int or index < 0:
        raise TokenError("malformed token: bad schedule index")
    if not isinstance(engine, str):
        raise TokenError("malformed token: bad engine token")
    decode_engine_token(engine)  # its own one-line TokenError when the inner token is damaged
    options = data.get("options", {})
    if not isinstance(options, dict) or not all(
        name in FIELD_NAMES and name not in SEARCH_ONLY and _plain(value) for name, value in options.items()
    ):
        raise TokenError("malformed token: bad options")
    return CliToken(scenario, fs, target, engine, index, tuple(instrument), catalogue, replay_options(options))
