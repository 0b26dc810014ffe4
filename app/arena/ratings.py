"""The leaderboard's numbers: Bradley-Terry strengths by a logistic fit of the votes, on an Elo-like scale, with
bootstrap 95% intervals; battles, wins, ties, losses, "both bad" and pairwise win rates per contestant.

The fit: each vote is a row of a logistic regression with +1 for the contestant on side A and -1 for side B; A's
win is y = 1, B's y = 0, a tie two rows of weight 1/2 (half a win each). "Both bad" votes are kept and counted but
left out of the fit: they say nothing about which is better. A weak L2 prior (PRIOR) keeps strengths finite when a
contestant never lost; it also makes the strengths sum to zero, so the scale is centred on BASE_RATING."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from app.arena.records import BOTH_BAD, TIE, A, B, Filters, Leaderboard, Outcome, PairRate, Standing

BASE_RATING = 1000.0
SCALE = 400.0 / math.log(10.0)  # log-odds to Elo points (a 400-point gap is 10:1 odds)
PRIOR = 0.01  # L2 weight on the strengths (log-odds)
BOOTSTRAP_ROUNDS = 200
BOOTSTRAP_SEED = 0  # the same votes always give the same intervals (a restart shows the same leaderboard)
NEWTON_STEPS = 100


def rows(outcomes: Sequence[Outcome], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(design, y, weight) of the fit: one row per decided vote, two half rows per tie; both-bad votes none."""
    design, ys, weights = [], [], []
    for outcome in outcomes:
        if outcome.vote == BOTH_BAD:
            continue
        x = np.zeros(len(index))
        x[index[outcome.model_a]] += 1.0
        x[index[outcome.model_b]] -= 1.0
        pairs = [(1.0, 1.0)] if outcome.vote == A else [(0.0, 1.0)] if outcome.vote == B else [(1.0, 0.5), (0.0, 0.5)]
        for y, weight in pairs:
            design.append(x)
            ys.append(y)
            weights.append(weight)
    if not design:
        return np.zeros((0, len(index))), np.zeros(0), np.zeros(0)
    return np.array(design), np.array(ys), np.array(weights)


def _loss(beta: np.ndarray, design: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    z = design @ beta
    return float(np.sum(w * (np.logaddexp(0.0, z) - y * z)) + PRIOR / 2 * beta @ beta)


def fit_strengths(design: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The strengths (log-odds) minimising the weighted logistic loss plus PRIOR/2 |beta|^2: damped Newton steps."""
    beta = np.zeros(design.shape[1])
    loss = _loss(beta, design, y, w)
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (w * (p - y)) + PRIOR * beta
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + PRIOR * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-6:
            candidate = beta - size * step
            new_loss = _loss(candidate, design, y, w)
            if new_loss <= loss:
                break
            size /= 2
        beta, done = candidate, loss - new_loss < 1e-12
        loss = new_loss
        if done or np.max(np.abs(size * step)) < 1e-10:
            break
    return beta


def elo(beta: np.ndarray) -> np.ndarray:
    """Strengths on the Elo-like scale."""
    return BASE_RATING + SCALE * beta


def ratings(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Each contestant's Elo-like score from `outcomes` (contestants only in both-bad votes score BASE_RATING)."""
    names = contestants(outcomes)
    index = {name: i for i, name in enumerate(names)}
    return dict(zip(names, elo(fit_strengths(*rows(outcomes, index))).tolist(), strict=True))


def contestants(outcomes: Sequence[Outcome]) -> list[str]:
    return sorted({name for outcome in outcomes for name in (outcome.model_a, outcome.model_b)})


def intervals(outcomes: Sequence[Outcome], names: list[str], rounds: int = BOOTSTRAP_ROUNDS,
              seed: int = BOOTSTRAP_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap 95% intervals (2.5th and 97.5th percentiles) of every score: the votes resampled with replacement
    `rounds` times, each sample fitted again."""
    index = {name: i for i, name in enumerate(names)}
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(rounds):
        picked = [outcomes[i] for i in rng.integers(0, len(outcomes), len(outcomes))]
        samples.append(elo(fit_strengths(*rows(picked, index))))
    stacked = np.array(samples)
    return np.percentile(stacked, 2.5, axis=0), np.percentile(stacked, 97.5, axis=0)


def counts(outcomes: Sequence[Outcome], name: str) -> tuple[int, int, int, int, int]:
    """(battles, wins, ties, losses, both bad) of `name`."""
    wins = ties = losses = bad = 0
    for outcome in outcomes:
        side = A if outcome.model_a == name else B if outcome.model_b == name else None
        if side is None:
            continue
        if outcome.vote == BOTH_BAD:
            bad += 1
        elif outcome.vote == TIE:
            ties += 1
        elif outcome.vote == side:
            wins += 1
        else:
            losses += 1
    return wins + ties + losses + bad, wins, ties, losses, bad


def pair_rates(outcomes: Sequence[Outcome], names: list[str]) -> list[PairRate]:
    """Every ordered pair's win rate (the heatmap's cells), for pairs that met."""
    out = []
    for first, second in (p for pair in combinations(names, 2) for p in (pair, pair[::-1])):
        met = [o for o in outcomes if {o.model_a, o.model_b} == {first, second}]
        if not met:
            continue
        standing = Standing(first, 0.0, 0.0, 0.0, *counts(met, first))
        out.append(PairRate(first, second, standing.battles, standing.win_rate))
    return out


def leaderboard(outcomes: Sequence[Outcome], filters: Filters | None = None,
                rounds: int = BOOTSTRAP_ROUNDS) -> Leaderboard:
    """The leaderboard of `outcomes`, best score first (`filters`: the ones that chose them, kept for display)."""
    outcomes, filters = list(outcomes), filters or Filters()
    if not outcomes:
        return Leaderboard(filters=filters)
    names = contestants(outcomes)
    scores = ratings(outcomes)
    low, high = intervals(outcomes, names, rounds)
    standings = [Standing(name, scores[name], float(low[i]), float(high[i]), *counts(outcomes, name))
                 for i, name in enumerate(names)]
    standings.sort(key=lambda s: (-s.rating, s.name))
    return Leaderboard(tuple(standings), tuple(pair_rates(outcomes, names)), len(outcomes), filters)
