"""The Arena's data as typed objects: votes, battles with their turns, filters, standings."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.arena.messages import (
    MSG_ARENA_BAD_FILTER,
    MSG_ARENA_BAD_PICTURES_FILTER,
    MSG_ARENA_BAD_VOTE,
    MSG_ARENA_FILTERS,
)
from app.core.errors import InvalidRequest

A, B, TIE, BOTH_BAD = "A", "B", "tie", "both_bad"
VOTES = (A, B, TIE, BOTH_BAD)
TEXT_ONLY, WITH_PICTURES = "text", "pictures"


def check_vote(value: object) -> str:
    """A caller's vote as stored; InvalidRequest in a sentence for anything else."""
    if value not in VOTES:
        raise InvalidRequest(MSG_ARENA_BAD_VOTE.format(value=value))
    return str(value)


@dataclass(frozen=True)
class Outcome:
    """One voted battle as the ratings read it: who sat on each side and the vote (one of VOTES)."""

    model_a: str
    model_b: str
    vote: str


@dataclass(frozen=True)
class TurnRecord:
    """One prompt of a battle and the two answers; `attachments`: SHA-256 hashes of its files (not the files)."""

    number: int
    prompt: str
    answer_a: str
    answer_b: str
    attachments: tuple[str, ...] = ()
    tstamp: float = 0.0


@dataclass(frozen=True)
class BattleRecord:
    """A battle as the database keeps it."""

    id: str
    model_a: str
    model_b: str
    started: float
    starter: str
    sampling: dict
    has_pictures: bool = False
    prompt_set: str | None = None
    set_index: int | None = None
    vote: str | None = None
    judge: str | None = None
    voted: float | None = None
    turns: tuple[TurnRecord, ...] = ()

    def outcome(self) -> Outcome | None:
        return Outcome(self.model_a, self.model_b, self.vote) if self.vote else None


@dataclass(frozen=True)
class Filters:
    """Which votes the leaderboard counts: pictures (TEXT_ONLY, WITH_PICTURES or None for both), one prompt set,
    one voter (None: all)."""

    pictures: str | None = None
    prompt_set: str | None = None
    voter: str | None = None

    @classmethod
    def of(cls, raw: object) -> Filters:
        """Filters from a caller's dict ({} or None for all); InvalidRequest naming a wrong key or value."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InvalidRequest(MSG_ARENA_FILTERS.format(value=raw))
        unknown = [key for key in raw if key not in ("pictures", "prompt_set", "voter")]
        if unknown:
            raise InvalidRequest(MSG_ARENA_BAD_FILTER.format(name=unknown[0]))
        pictures = raw.get("pictures") or None
        if pictures not in (None, TEXT_ONLY, WITH_PICTURES):
            raise InvalidRequest(MSG_ARENA_BAD_PICTURES_FILTER.format(value=pictures))
        return cls(pictures, str(raw.get("prompt_set") or "") or None, str(raw.get("voter") or "") or None)


@dataclass(frozen=True)
class Standing:
    """A contestant's row: Elo-like score with its bootstrap 95% interval, and its counts (both-bad votes are
    counted apart: not a win, not a tie)."""

    name: str
    rating: float
    low: float
    high: float
    battles: int
    wins: int
    ties: int
    losses: int
    both_bad: int

    @property
    def win_rate(self) -> float | None:
        """(wins + ties / 2) over the battles that were not "both bad"; None without such battles."""
        decided = self.wins + self.ties + self.losses
        return (self.wins + self.ties / 2) / decided if decided else None


@dataclass(frozen=True)
class PairRate:
    """How `first` fared against `second`: wins + ties / 2 over their battles not voted both bad."""

    first: str
    second: str
    battles: int
    win_rate: float | None


@dataclass(frozen=True)
class Leaderboard:
    """Standings best first, the pairwise win rates, how many votes were counted."""

    standings: tuple[Standing, ...] = ()
    pairs: tuple[PairRate, ...] = ()
    votes: int = 0
    filters: Filters = field(default_factory=Filters)
