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
