"""Tokens are versioned and checked; bad input gives a one-line TokenError, never a hang or a wrong replay."""

import classic_bugs
import pytest
import racecheck
from racecheck.search.tokens import Token, decode, shape_of


def test_token_round_trip():
    token = Token("pct", 7, 12, "abcd", "-", shape_of([2, 3, 2]), (0, 2, 1, 0, 300))
    text = token.encode()
    assert decode(text) == token
    assert text.startswith("rc1.pct.7.12.")


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("", "not a racecheck token"),
        ("hello", "not a racecheck token"),
        ("rc9.pct.0.0.a.b.c.d.e", "unsupported token version"),
        ("rc1.pct.0", "expected 9"),
        (12345, "expected a string"),
    ],
)
def test_malformed_tokens_are_refused(bad, reason):
    with pytest.raises(racecheck.TokenError, match=reason):
        decode(bad)


def _failing_token():
    return racecheck.explore(classic_bugs.lost_update, strategy="random", schedules=200).failure.token


def test_edited_token_is_refused():
    token = _failing_token()
    edited = token[:-12] + ("A" if token[-12] != "A" else "B") + token[-11:]
    with pytest.raises(racecheck.TokenError, match="checksum"):
        racecheck.replay(classic_bugs.lost_update, edited)


def test_foreign_token_is_refused_naming_the_function_it_was_recorded_for():
    from racecheck.errors import ForeignTokenError

    token = _failing_token()
    with pytest.raises(ForeignTokenError) as info:
        racecheck.replay(classic_bugs.check_then_act, token)
    owner, test = f"{classic_bugs.__name__}.lost_update", f"{classic_bugs.__name__}.check_then_act"
    assert str(info.value) == f"token was recorded for another test function ({owner}), not {test}"
    assert (info.value.owner, info.value.test) == (owner, test)
    assert isinstance(info.value, racecheck.TokenError)


def test_foreign_token_of_a_function_elsewhere_is_refused_without_a_name():
    from racecheck.errors import ForeignTokenError

    def elsewhere():
        pass

    with pytest.raises(ForeignTokenError, match="^token was recorded for another test function, not ") as info:
        racecheck.replay(elsewhere, _failing_token())
    assert info.value.owner is None


def test_token_errors_are_one_line():
    with pytest.raises(racecheck.TokenError) as info:
        racecheck.replay(classic_bugs.lost_update, "rc1.x")
    assert "\n" not in str(info.value)


def test_a_token_names_the_modules_its_run_watched_beyond_the_warm_up():
    """The optional tenth field: absent when empty (older tokens read as before), round-trips names, and a damaged
    field is a one-line TokenError, never a traceback."""
    from racecheck.errors import TokenError
    from racecheck.search.tokens import Token, decode

    plain = Token("pct", 0, 3, "abcd", "ef01", "2x0000", (1, 0), (1, 2), (4, 9, 12))
    assert len(plain.encode().split(".")) == 9 and decode(plain.encode()).modules == ()
    named = Token("pct", 0, 3, "abcd", "ef01", "2x0000", (1, 0), (1, 2), (4, 9, 12), ("torch._tensor", "a.b_c"))
    text = named.encode()
    assert len(text.split(".")) == 10 and decode(text) == named
    parts = text.split(".")
    import base64
    import zlib

    from racecheck.search.tokens import short_hash

    junk = base64.urlsafe_b64encode(zlib.compress(b"not a module!")).decode().rstrip("=")
    for damaged in ("AAAA", junk):  # not zlib at all; zlib of something that is not module names
        body = ".".join([*parts[:8], damaged])
        with pytest.raises(TokenError, match="watched-modules"):
            decode(f"{body}.{short_hash(body, 8)}")
