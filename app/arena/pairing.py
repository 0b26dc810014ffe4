"""Which two contestants battle next: a pair with the fewest battles so far (ties broken at random), sides drawn at
random, so every pair gets battles instead of uniform draws that leave some pairs short for a long time."""

from __future__ import annotations

import random
from itertools import combinations

from app.arena.messages import MSG_ARENA_TOO_FEW
from app.core.errors import InvalidRequest


def next_pair(contestants: list[str], battles: dict[frozenset[str], int],
              rng: random.Random | None = None) -> tuple[str, str]:
    """(side A, side B) among `contestants` (distinct names); `battles`: how many each pair has had."""
    names = list(dict.fromkeys(contestants))
    if len(names) < 2:
        raise InvalidRequest(MSG_ARENA_TOO_FEW)
    rng = rng or random.SystemRandom()
    pairs = list(combinations(names, 2))
    fewest = min(battles.get(frozenset(pair), 0) for pair in pairs)
    first, second = rng.choice([pair for pair in pairs if battles.get(frozenset(pair), 0) == fewest])
    return (first, second) if rng.random() < 0.5 else (second, first)
