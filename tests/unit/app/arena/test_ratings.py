"""The leaderboard's numbers against a logistic fit made here with scipy from the same votes."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from app.arena.ratings import BASE_RATING, PRIOR, leaderboard, ratings
from app.arena.records import BOTH_BAD, TIE, A, B, Outcome

STRENGTH = {"base model": 0.0, "pirate": 0.8, "french": -0.5, "poet": 0.3}


def simulated_votes(count: int, seed: int = 7) -> list[Outcome]:
    """Votes drawn from known strengths: some ties and some both-bad votes among them."""
    rng = random.Random(seed)
    names = list(STRENGTH)
    out = []
    for _ in range(count):
        a, b = rng.sample(names, 2)
        draw = rng.random()
        if draw < 0.1:
            out.append(Outcome(a, b, TIE))
        elif draw < 0.15:
            out.append(Outcome(a, b, BOTH_BAD))
        else:
            p = 1 / (1 + math.exp(STRENGTH[b] - STRENGTH[a]))
            out.append(Outcome(a, b, A if rng.random() < p else B))
    return out


def reference_scores(votes: list[Outcome]) -> dict[str, float]:
    """An independent fit: per vote, P(A wins) = sigmoid(s_A - s_B); a tie is half a win for each; both-bad votes
    carry no information; the same weak L2 prior; minimised with BFGS, mapped to 400 points per factor 10."""
    names = sorted({n for v in votes for n in (v.model_a, v.model_b)})
    where = {n: i for i, n in enumerate(names)}
    decided = [(where[v.model_a], where[v.model_b], {A: 1.0, B: 0.0, TIE: 0.5}[v.vote]) for v in votes
               if v.vote != BOTH_BAD]

    def loss(s):
        total = PRIOR / 2 * float(np.dot(s, s))
        for a, b, score in decided:
            d = s[a] - s[b]
            total += score * np.logaddexp(0, -d) + (1 - score) * np.logaddexp(0, d)
        return total

    fitted = minimize(loss, np.zeros(len(names)), method="BFGS", options={"gtol": 1e-9}).x
    return {n: BASE_RATING + 400 / math.log(10) * fitted[where[n]] for n in names}


def test_scores_match_an_independent_logistic_fit_within_one_percent():
    votes = simulated_votes(400)
    ours, reference = ratings(votes), reference_scores(votes)
    assert set(ours) == set(STRENGTH)
    for name in STRENGTH:  # within 1% of each score's distance from the centre (the fitted log-odds)
        gap = reference[name] - BASE_RATING
        assert abs((ours[name] - BASE_RATING) - gap) <= 0.01 * abs(gap), (name, ours, reference)
    assert max(ours, key=ours.get) == "pirate" and min(ours, key=ours.get) == "french"


def test_ties_are_half_a_win_and_both_bad_is_counted_apart():
    votes = [Outcome("x", "y", A), Outcome("x", "y", TIE), Outcome("y", "x", TIE), Outcome("x", "y", BOTH_BAD)]
    board = leaderboard(votes, rounds=20)
    x = next(s for s in board.standings if s.name == "x")
    assert (x.battles, x.wins, x.ties, x.losses, x.both_bad) == (4, 1, 2, 0, 1)
    assert x.win_rate == pytest.approx(2 / 3)
    # both-bad votes move no score: the same leaderboard without it has the same scores
    without = leaderboard(votes[:3], rounds=20)
    assert [s.rating for s in board.standings] == pytest.approx([s.rating for s in without.standings])
    only_bad = ratings([Outcome("x", "y", BOTH_BAD)])
    assert only_bad == {"x": BASE_RATING, "y": BASE_RATING}


def test_a_contestant_that_never_lost_gets_a_finite_score_and_intervals_hold_the_score():
    board = leaderboard([Outcome("x", "y", A)] * 5 + [Outcome("y", "x", B)] * 5, rounds=50)
    top, bottom = board.standings
    assert top.name == "x" and math.isfinite(top.rating) and top.rating > bottom.rating
    for s in board.standings:
        assert s.low <= s.rating + 1e-6 and s.rating - 1e-6 <= s.high


def test_the_same_votes_give_the_same_leaderboard_and_pairwise_rates():
    votes = simulated_votes(120, seed=3)
    first, again = leaderboard(votes, rounds=30), leaderboard(list(votes), rounds=30)
    assert first == again
    cells = {(p.first, p.second): p for p in first.pairs}
    for (one, two), cell in cells.items():
        other = cells[(two, one)]
        assert cell.battles == other.battles
        if cell.win_rate is not None:
            assert cell.win_rate + other.win_rate == pytest.approx(1.0)
    assert sum(s.battles for s in first.standings) == 2 * len(votes)


def test_no_votes_no_standings():
    board = leaderboard([])
    assert board.standings == () and board.votes == 0
