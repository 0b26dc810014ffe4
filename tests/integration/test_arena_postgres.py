"""The Arena's store on a real PostgreSQL server (Debian's, started for this module in the run's temporary folder,
tests/postgres_server.py) through `postgresql+psycopg://`: the checks of the SQLite store that matter for a team's
database. Two threads voting on the same 50 battles at once lose no vote and each battle takes exactly one; a
second vote is refused; the store reopened gives the same leaderboard, prompt sets (pictures as bytes) and filters.

Skipped, with the reason in one line, only where PostgreSQL is not installed (`make test` installs it); under CI a
missing PostgreSQL fails the test instead."""

from __future__ import annotations

import itertools
import os
import threading

import pytest

from app.arena.records import TIE, WITH_PICTURES, A, B, BattleRecord, Filters, TurnRecord
from app.arena.service import Arena
from app.arena.store import ArenaStore
from app.core.errors import InvalidRequest
from tests.postgres_server import PostgresStartError, PostgresUnavailable, start_postgres

BATTLES = 50
NAMES = ("base model", "pirate", "french")
DATABASES = itertools.count()


@pytest.fixture(scope="module")
def postgres():
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test PostgreSQL: {exc}", pytrace=False)
        pytest.skip(str(exc))
    except PostgresStartError as exc:
        pytest.fail(f"PostgreSQL did not start: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def db_url(postgres) -> str:
    """A database of this test's own on the module's server."""
    import psycopg

    name = f"arena_{next(DATABASES)}"
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user="arena", dbname="postgres",
                         autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return postgres.url(name)


@pytest.fixture
def store(db_url):
    opened = ArenaStore(db_url)
    yield opened
    opened.close()


def battle(number: int, **more) -> BattleRecord:
    a, b = NAMES[number % 3], NAMES[(number + 1) % 3]
    return BattleRecord(f"b{number:03d}", a, b, 1000.0 + number, "local", {"max_tokens": 8, "seed": number}, **more)


def test_two_threads_voting_on_the_same_fifty_battles_at_once_lose_none_and_each_takes_one(store):
    for number in range(BATTLES):
        store.add_battle(battle(number))
    accepted: dict[int, str] = {}
    refused: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(2)

    def voter(vote: str) -> None:
        start.wait()
        for number in range(BATTLES):  # both try every battle: exactly one vote each may win
            try:
                store.vote(f"b{number:03d}", vote, f"voter {vote}")
                with lock:
                    accepted[number] = vote
            except InvalidRequest:
                with lock:
                    refused.append(number)

    threads = [threading.Thread(target=voter, args=(vote,)) for vote in (A, B)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert sorted(accepted) == list(range(BATTLES)) and sorted(refused) == list(range(BATTLES))
    kept = {int(b.id[1:]): (b.vote, b.judge) for b in store.battles(voted_only=True)}
    assert kept == {number: (vote, f"voter {vote}") for number, vote in accepted.items()}


def test_a_second_vote_is_refused_and_the_first_kept(store):
    store.add_battle(battle(1))
    store.vote("b001", TIE, "ann")
    with pytest.raises(InvalidRequest, match="Battle b001 has already been voted on"):
        store.vote("b001", A, "bob")
    with pytest.raises(InvalidRequest, match="There is no battle 'nope'"):
        store.vote("nope", A, "bob")
    assert (store.battle("b001").vote, store.battle("b001").judge) == (TIE, "ann")


def test_a_reopen_gives_the_same_leaderboard_prompt_sets_and_filters(db_url, tmp_path):
    store = ArenaStore(db_url)
    try:
        for number in range(12):
            store.add_battle(battle(number, prompt_set="shapes" if number < 4 else None,
                                    set_index=number if number < 4 else None))
            store.add_turn(f"b{number:03d}", TurnRecord(1, "Which?", "This.", "That.",
                                                        ("ab" * 32,) if number % 2 else (), 1000.5 + number))
            store.vote(f"b{number:03d}", (A, B, TIE, A)[number % 4], "ann" if number % 3 else "bob")
        store.add_prompt_set("shapes", [("One?", []), ("Two?", ["c.png"])], {"c.png": b"\x89PNG\x00\xff"})
    finally:
        store.close()
    first, again = Arena(db_url, tmp_path), Arena(db_url, tmp_path)
    try:
        board = first.leaderboard({})
        first.close()
        assert board.votes == 12 and {s.name for s in board.standings} == set(NAMES)
        assert again.leaderboard({}) == board
        assert again.leaderboard({"pictures": WITH_PICTURES}).votes == 6
        assert again.leaderboard({"prompt_set": "shapes"}).votes == 4
        assert {b.id for b in again.store.battles(Filters(voter="bob"), voted_only=True)} == {"b000", "b003", "b006",
                                                                                             "b009"}
        assert again.store.set_prompts("shapes") == [("One?", []), ("Two?", ["c.png"])]
        assert again.store.set_picture("shapes", "c.png") == b"\x89PNG\x00\xff"
        assert again.store.voted_set_prompts("shapes", "ann") == {1, 2}
        assert again.store.choices() == (["shapes"], ["ann", "bob"])
        assert [b.id for b in again.store.battles(voted_only=True)] == [f"b{n:03d}" for n in range(12)]
    finally:
        again.close()
