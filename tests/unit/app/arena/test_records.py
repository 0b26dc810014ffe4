"""Callers' votes and leaderboard filters: accepted as documented, anything else refused in a sentence."""

from __future__ import annotations

import pytest

from app.arena.records import Filters, Standing, check_vote
from app.core.errors import InvalidRequest


def test_votes_and_filters_as_callers_give_them():
    assert [check_vote(v) for v in ("A", "B", "tie", "both_bad")] == ["A", "B", "tie", "both_bad"]
    assert Filters.of({}) == Filters() == Filters.of(None)
    assert Filters.of({"pictures": "text", "prompt_set": "five", "voter": ""}) == Filters("text", "five", None)


@pytest.mark.parametrize("raw, sentence", [
    ({"colour": "red"}, "Unknown leaderboard filter 'colour'"),
    ({"pictures": "some"}, "The pictures filter must be"),
    (["voter"], "filters must be an object"),
])
def test_bad_filters_get_a_sentence(raw, sentence):
    with pytest.raises(InvalidRequest, match=sentence):
        Filters.of(raw)


def test_a_bad_vote_gets_a_sentence():
    with pytest.raises(InvalidRequest, match="vote must be one of A, B, tie or both_bad; got 'a'"):
        check_vote("a")


def test_win_rate_leaves_both_bad_out():
    assert Standing("x", 1000, 990, 1010, battles=5, wins=2, ties=1, losses=1, both_bad=1).win_rate == 0.625
    assert Standing("x", 1000, 1000, 1000, battles=1, wins=0, ties=0, losses=0, both_bad=1).win_rate is None
