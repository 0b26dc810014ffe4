"""The database: battles, turns and votes kept across a reopen, one vote per battle even from many threads at once,
filters, prompt sets, and a sentence for a database that cannot be opened."""

from __future__ import annotations

import threading

import pytest

from app.arena.records import TEXT_ONLY, TIE, WITH_PICTURES, A, B, BattleRecord, Filters, TurnRecord
from app.arena.store import ArenaDbError, ArenaStore, default_url
from app.core.errors import InvalidRequest


def battle(number: int, a: str = "base model", b: str = "pirate", **more) -> BattleRecord:
    return BattleRecord(f"b{number:03d}", a, b, 1000.0 + number, "local", {"max_tokens": 8, "seed": number}, **more)


@pytest.fixture
def store(tmp_path):
    opened = ArenaStore(default_url(tmp_path))
    yield opened
    opened.close()


def test_a_battle_its_turns_and_its_vote_survive_a_reopen(store, tmp_path):
    store.add_battle(battle(1, prompt_set="colours", set_index=2))
    store.add_turn("b001", TurnRecord(1, "Hello?", "Hi.", "Arr!", (), 1001.5))
    store.add_turn("b001", TurnRecord(2, "And this?", "A cat.", "A cat, matey.", ("ab" * 32,), 1002.5))
    store.vote("b001", TIE, "ann", when=1003.0)
    again = ArenaStore(default_url(tmp_path))
    try:
        kept = again.battle("b001")
    finally:
        again.close()
    assert (kept.model_a, kept.model_b, kept.vote, kept.judge, kept.voted) == ("base model", "pirate", TIE, "ann", 1003.0)
    assert kept.sampling == {"max_tokens": 8, "seed": 1} and kept.prompt_set == "colours" and kept.set_index == 2
    assert [t.prompt for t in kept.turns] == ["Hello?", "And this?"] and kept.turns[1].attachments == ("ab" * 32,)
    assert kept.has_pictures  # a turn with attachments marks the battle


def test_a_second_vote_and_a_vote_on_an_unknown_battle_are_refused(store):
    store.add_battle(battle(1))
    store.vote("b001", A, "local")
    with pytest.raises(InvalidRequest, match="already been voted on"):
        store.vote("b001", B, "local")
    with pytest.raises(InvalidRequest, match="There is no battle 'nope'"):
        store.vote("nope", A, "local")
    assert store.battle("b001").vote == A


def test_fifty_votes_from_ten_threads_at_once_lose_none_and_each_battle_takes_one(store):
    for number in range(50):
        store.add_battle(battle(number))
    accepted, refused = [], []
    lock = threading.Lock()

    def voter(worker: int) -> None:
        for number in range(50):  # every thread tries every battle: exactly one vote each may win
            try:
                store.vote(f"b{number:03d}", A if worker % 2 else B, f"voter{worker}")
                with lock:
                    accepted.append(number)
            except InvalidRequest:
                with lock:
                    refused.append(number)

    threads = [threading.Thread(target=voter, args=(w,)) for w in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(accepted) == list(range(50))
    assert len(refused) == 50 * 9
    assert len(store.outcomes()) == 50


def test_filters_choose_votes_by_pictures_prompt_set_and_voter(store):
    store.add_battle(battle(1))
    store.add_battle(battle(2, prompt_set="shapes"))
    store.add_turn("b002", TurnRecord(1, "What shape?", "A circle.", "A round thing.", ("cd" * 32,), 5.0))
    store.add_battle(battle(3))  # never voted
    store.vote("b001", A, "ann")
    store.vote("b002", B, "bob")
    assert len(store.outcomes()) == 2
    assert [o.vote for o in store.outcomes(Filters(pictures=TEXT_ONLY))] == [A]
    assert [o.vote for o in store.outcomes(Filters(pictures=WITH_PICTURES))] == [B]
    assert [o.vote for o in store.outcomes(Filters(prompt_set="shapes"))] == [B]
    assert [o.vote for o in store.outcomes(Filters(voter="ann"))] == [A]
    assert store.pair_counts() == {frozenset(("base model", "pirate")): 3}
    assert store.choices() == ([], ["ann", "bob"])


def test_a_prompt_set_keeps_its_prompts_in_order_and_its_pictures(store):
    store.add_prompt_set("shapes", [("One?", []), ("Two?", ["c.png"])], {"c.png": b"\x89PNG..."})
    assert store.set_prompts("shapes") == [("One?", []), ("Two?", ["c.png"])]
    assert store.set_picture("shapes", "c.png") == b"\x89PNG..."
    assert store.set_prompts("other") is None
    store.add_prompt_set("shapes", [("Only?", [])], {})  # uploaded again: replaced
    assert store.set_prompts("shapes") == [("Only?", [])] and store.set_picture("shapes", "c.png") is None


@pytest.mark.parametrize("url, words", [
    ("nosuchdb://x", "cannot be opened"),
    ("sqlite:////nonexistent-folder-for-arena/sub/arena.sqlite3", "cannot be opened: unable to open database file"),
    ("postgresql://arena:secret@127.0.0.1:1/arena", "cannot be opened"),
])
def test_a_database_that_cannot_be_opened_gets_a_sentence_without_its_password(url, words):
    with pytest.raises(ArenaDbError, match=words) as caught:
        ArenaStore(url)
    assert "secret" not in str(caught.value)
