"""Pair scheduling: every pair gets battles, sides are mixed, fewer than two contestants are refused."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest

from app.arena.pairing import next_pair
from app.core.errors import InvalidRequest


def test_every_pair_battles_before_any_pair_battles_twice_and_sides_are_mixed():
    names = ["base model", "pirate", "french", "poet"]
    counts: Counter = Counter()
    sides: Counter = Counter()
    rng = random.Random(1)
    for round_ in range(3):
        for _ in range(6):  # six pairs of four
            a, b = next_pair(names, dict(counts), rng)
            assert a != b
            counts[frozenset((a, b))] += 1
            sides[a] += 1
        assert set(counts.values()) == {round_ + 1}, counts  # each round of six covers every pair once
    assert len(counts) == len(list(combinations(names, 2)))
    assert all(sides[name] > 0 for name in names)


def test_the_least_fought_pair_comes_next():
    counts = {frozenset(("a", "b")): 5, frozenset(("a", "c")): 5, frozenset(("b", "c")): 1}
    assert set(next_pair(["a", "b", "c"], counts, random.Random(0))) == {"b", "c"}


@pytest.mark.parametrize("names", [[], ["pirate"], ["pirate", "pirate"]])
def test_fewer_than_two_contestants_are_refused(names):
    with pytest.raises(InvalidRequest, match="at least two contestants"):
        next_pair(names, {})
