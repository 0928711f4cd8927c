"""Hypothesis fuzzing of everything a user can type or paste: the CLI token decoder, the baseline reader and the
CLI arguments. Every malformed input is a one-line error (exit status 2 on the command line), never a traceback,
never a hang, never a partly written report."""

from __future__ import annotations

import itertools
import json
import os
import string

import pytest
from cli_helpers import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from racecheck.errors import TokenError
from racecheck.frontends.clitoken import CliToken, decode
from racecheck.report import gate
from racecheck.search.tokens import Token

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))

ENGINE = Token("pct", 3, 17, "26c9", "3973", "5x94b3", (0, 1, 0, 2, 1)).encode()
VALID = CliToken("lost-update", "posix", "cli_stub_catalogue:RacyCounter", ENGINE, 17, ("json",), None).encode()

names = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=30)


@given(names, st.sampled_from(["posix", "windows", "real"]), st.text(max_size=80), st.integers(0, 2**40),
       st.lists(st.sampled_from(["json", "a.b", "x_y.z"]), max_size=3), st.none() | st.just("pkg.cat"))
@FUZZ
def test_token_round_trips(scenario, fs, target, index, instrument, catalogue):
    if not target:
        target = "m:C"
    token = CliToken(scenario, fs, target, ENGINE, index, tuple(instrument), catalogue)
    assert decode(token.encode()) == token
    assert decode("  " + token.encode() + "\n") == token  # pasted with whitespace


def _decode_or_token_error(text):
    try:
        decode(text)
    except TokenError as exc:
        message = str(exc)
        assert message and "\n" not in message
        return False
    return True


@given(st.text(max_size=300))
@FUZZ
def test_arbitrary_text_is_refused_with_one_line(text):
    assert not _decode_or_token_error(text) or text.strip() == VALID


@given(st.integers(0, len(VALID) - 1), st.sampled_from(string.ascii_letters + string.digits + "._-=+/ "),
       st.integers(0, len(VALID)))
@FUZZ
def test_edited_or_truncated_tokens_are_refused(position, char, cut):
    edited = VALID[:position] + char + VALID[position + 1 :]
    if edited != VALID:
        assert not _decode_or_token_error(edited)
    if cut < len(VALID) and VALID[:cut].strip() != VALID:
        assert not _decode_or_token_error(VALID[:cut])


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                 max_size=4), max_leaves=20))
@FUZZ
def test_token_with_a_valid_checksum_but_a_bad_payload_is_refused(payload):
    import base64
    import hashlib
    import zlib

    raw = json.dumps(payload).encode()
    body = "rcc1.s.posix." + base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")
    token = f"{body}.{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    assert not _decode_or_token_error(token)


def test_a_zip_bomb_payload_is_refused_quickly():
    import base64
    import hashlib
    import zlib

    body = "rcc1.s.posix." + base64.urlsafe_b64encode(zlib.compress(b"[" * 50_000_000, 9)).decode().rstrip("=")
    token = f"{body}.{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    with pytest.raises(TokenError, match="too large"):
        decode(token)
    body = "rcc1.s.posix." + base64.urlsafe_b64encode(zlib.compress(b"[" * 200_000, 9)).decode().rstrip("=")
    token = f"{body}.{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    with pytest.raises(TokenError, match="not JSON"):  # nested too deep for the parser: refused, no traceback
        decode(token)


# ----- the baseline reader ----------------------------------------------------------------------------------------

GOOD = {"schema": gate.SCHEMA, "tolerance": 0.5, "reference": {"schedules": 10},
        "cells": [{"scenario": "lost-update", "target": "m.n:C", "semantics": "real", "strategy": "pct", "seed": 0,
                   "schedules": 10, "expect": "race", "relative_throughput": 0.5}]}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)


def _parse_or_error(text):
    try:
        gate.parse(text)
    except gate.BaselineError as exc:
        assert str(exc) and "\n" not in str(exc)
        return False
    return True


@given(json_values)
@FUZZ
def test_any_json_document_is_accepted_or_refused_with_one_line(value):
    _parse_or_error(json.dumps(value))


@given(st.sampled_from(["tolerance", "reference", "cells", "schema"]), json_values)
@FUZZ
def test_one_bad_top_level_field(field, value):
    _parse_or_error(json.dumps({**GOOD, field: value}))


@given(st.sampled_from(sorted(GOOD["cells"][0]) + ["extra", "shrink_budget", "max_failures", "expect_failures"]),
       json_values | st.lists(st.text(max_size=12), max_size=3))
@FUZZ
def test_one_bad_cell_field(field, value):
    cell = {**GOOD["cells"][0], field: value}
    _parse_or_error(json.dumps({**GOOD, "cells": [cell]}))


@given(st.binary(max_size=200))
@FUZZ
def test_arbitrary_bytes(raw):
    _parse_or_error(raw)


def test_deeply_nested_json_is_refused_not_a_recursion_traceback():
    assert not _parse_or_error("[" * 100_000 + "]" * 100_000)


# ----- CLI arguments -----------------------------------------------------------------------------------------------

junk = st.sampled_from(["", "-1", "0", "x", "1e400", "nan", "inf", "--", "-", "\x00", "é", "99999999999999999999",
                        "lost-update", "os:path", "a:b:c", ":", "json", "2*popen", "0*popen", "rcc1.", "rc1.x"])
option_values = {
    "--schedules": st.sampled_from(["1", "3"]) | junk,
    "--seed": st.sampled_from(["0", "-5"]) | junk,
    "--strategy": st.sampled_from(["pct", "random", "dfs"]) | junk,
    "--fs": st.sampled_from(["posix", "windows", "both", "real"]) | junk,
    "--jobs": st.sampled_from(["1"]) | junk.filter(lambda v: v not in ("2*popen",)),
    "--target": st.sampled_from(["cli_stub_catalogue:LockedCounter", "cli_stub_catalogue:RacyCounter"]) | junk,
    "--time-budget": st.sampled_from(["30"]) | junk,
    "--instrument": st.sampled_from(["json"]) | junk,
    "--tx": junk.filter(lambda v: "popen" not in v),
    "--max-failures": st.sampled_from(["1", "2", "5", "1000", "1001", "-2", "3.5", "0x2", " 2"]) | junk,
}


@st.composite
def run_arguments(draw):
    args = ["run"]
    args += draw(st.lists(st.sampled_from(["lost-update", "rare-order", "nope", "-q", "--quiet", "--bogus"]) | junk,
                          max_size=2))
    for option in draw(st.lists(st.sampled_from(sorted(option_values)), max_size=4)):
        args.append(option)
        if draw(st.integers(0, 9)):  # now and then the value is missing and the next word is taken for it
            args.append(draw(option_values[option]))
    if "--schedules" not in args:
        args += ["--schedules", "2"]  # keep valid runs short
    return args


@st.composite
def other_arguments(draw):
    command = draw(st.sampled_from(["replay", "gate", "list", "demo", "nope", "--version", "--help"]) | junk)
    rest = draw(st.lists(st.sampled_from(["--baseline", "--report", "--update", "--schedules", "--seed"]) | junk,
                         max_size=3))
    if command == "demo" and "--help" not in rest:
        rest = [*rest, "--seed", "x"]  # the demo itself (Lightning) is exercised elsewhere; here only its parsing
    return [command, *rest]


_counter = itertools.count()


def _check(result, report_dir=None):
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("racecheck: error: "), result.stderr
        if report_dir is not None:
            assert not os.path.exists(report_dir) or os.listdir(report_dir) == []


@given(run_arguments(), st.booleans())
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
def test_run_arguments(stub_env, args, with_report):
    report_dir = None
    if with_report:
        report_dir = os.path.join(stub_env, f"rep{next(_counter)}")
        args = [*args, "--report", report_dir]
    _check(invoke(*args), report_dir)


@given(other_arguments())
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_other_commands_arguments(stub_env, args):
    _check(invoke(*args))


@pytest.mark.parametrize("value", ["0", "-1", "x", "", "1.5", "1e3", "99999999999999999999"])
def test_bad_max_failures_is_one_usage_line_and_exit_2(stub, value):
    result = invoke("run", "lost-update", "--max-failures", value, "--schedules", "2")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("racecheck: error: ") and "--max-failures" in lines[0], lines
    assert "Traceback" not in result.output


@pytest.fixture
def stub_env(stub, tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz"))
