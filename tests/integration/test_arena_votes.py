"""The Arena through its Gradio API on the CPU demo: two clients start battles and vote at the same time (50 votes,
none lost), a second vote and bad input get their sentences, names appear only in the vote's answer, the app
restarted on the same database shows the same leaderboard, and a prompt set uploaded through the API is walked. One app of this module's own (its database in a scratch
folder) against the session's tritonserver; answers of two tokens keep it short."""

from __future__ import annotations

import json
import threading

import pytest
from gradio_client import Client, handle_file

from tests.arena_app import launch_app

VOTES_EACH = 25
NAMES = ("base model", "pirate", "french")


@pytest.fixture(scope="module")
def arena_db(tmp_path_factory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('arena') / 'arena.sqlite3'}"


@pytest.fixture(scope="module")
def arena_app(triton, arena_db):
    ctx, blocks, url = launch_app(triton, arena_db)
    yield ctx, url
    blocks.close()


def client(served) -> Client:
    ctx, url = served
    return Client(url, verbose=False, headers={"X-Launch-Token": ctx.access.token})


def battle_and_vote(api: Client, vote: str, contestants: list[str] | None = None) -> tuple[list[dict], dict]:
    updates = list(api.submit(prompt="Name a colour.", contestants=contestants, max_tokens=2, seed=7,
                              api_name="/arena_start"))
    answer = api.predict(battle=updates[-1]["battle"], vote=vote, api_name="/arena_vote")
    return updates, answer


def test_fifty_votes_from_two_clients_at_once_lose_none_and_a_restart_shows_the_same_board(arena_app, arena_db,
                                                                                           triton):
    kept, errors = [], []
    lock = threading.Lock()

    def voter(votes: tuple[str, ...]) -> None:
        api = client(arena_app)
        try:
            for i in range(VOTES_EACH):
                updates, answer = battle_and_vote(api, votes[i % len(votes)])
                with lock:
                    kept.append((updates, answer))
        except Exception as exc:  # noqa: BLE001 - reported below with the others
            errors.append(repr(exc))

    threads = [threading.Thread(target=voter, args=(v,)) for v in (("A", "tie"), ("B", "both_bad"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    assert not errors, errors
    assert len(kept) == 2 * VOTES_EACH
    for updates, answer in kept:
        assert updates[-1]["done"] and updates[-1]["a"] and updates[-1]["b"]
        streamed = json.dumps(updates)  # the anonymous updates carry no name; the vote's answer does
        assert set(updates[-1]) == {"battle", "a", "b", "done"}
        assert answer["model_a"] in NAMES and answer["model_b"] in NAMES and answer["model_a"] != answer["model_b"]
        assert '"model_a"' not in streamed and '"names"' not in streamed
    api = client(arena_app)
    board = api.predict(filters={}, api_name="/arena_leaderboard")
    assert board["votes"] == 2 * VOTES_EACH
    assert sum(c["battles"] for c in board["contestants"]) == 4 * VOTES_EACH  # two contestants per battle
    assert {c["name"] for c in board["contestants"]} == set(NAMES)  # the pairing reached every contestant
    assert sum(c["both_bad"] for c in board["contestants"]) == 2 * (VOTES_EACH // 2)  # odd-numbered votes
    exported = api.predict(format="jsonl", api_name="/arena_export").splitlines()
    assert len(exported) == 2 * VOTES_EACH
    assert {json.loads(line)["winner"] for line in exported} == {"model_a", "model_b", "tie", "tie (bothbad)"}
    battle = kept[0][1]["battle"]
    with pytest.raises(Exception, match=f"Battle {battle} has already been voted on"):
        api.predict(battle=battle, vote="A", api_name="/arena_vote")

    ctx, blocks, url = launch_app(triton, arena_db)  # the app again, on the same database
    try:
        again = client((ctx, url)).predict(filters={}, api_name="/arena_leaderboard")
    finally:
        blocks.close()
    assert again == board


@pytest.mark.parametrize("kwargs, sentence", [
    ({"contestants": ["pirate"]}, "A battle needs at least two contestants"),
    ({"contestants": ["base model", "nobody"]}, "There is no contestant named 'nobody'"),
])
def test_bad_battles_get_a_sentence(arena_app, kwargs, sentence):
    with pytest.raises(Exception, match=sentence):
        client(arena_app).predict(prompt="Hi", max_tokens=2, **kwargs, api_name="/arena_start")


@pytest.mark.parametrize("kwargs, sentence", [
    ({"battle": "nope", "vote": "A"}, "There is no battle 'nope'"),
    ({"battle": "nope", "vote": "C"}, "vote must be one of A, B, tie or both_bad"),
])
def test_bad_votes_get_a_sentence(arena_app, kwargs, sentence):
    with pytest.raises(Exception, match=sentence):
        client(arena_app).predict(**kwargs, api_name="/arena_vote")


def test_writes_need_the_launch_token_but_the_leaderboard_is_open(arena_app):
    _ctx, url = arena_app
    anonymous = Client(url, verbose=False)
    with pytest.raises(Exception, match="launch token"):
        anonymous.predict(prompt="Hi", max_tokens=2, api_name="/arena_start")
    with pytest.raises(Exception, match="launch token"):
        anonymous.predict(format="csv", api_name="/arena_export")
    assert "contestants" in anonymous.predict(filters={}, api_name="/arena_leaderboard")


def test_a_prompt_set_uploaded_through_the_api_is_walked_in_order(arena_app, tmp_path):
    api = client(arena_app)
    jsonl = tmp_path / "two.jsonl"
    jsonl.write_text('{"prompt": "Say hi."}\n{"prompt": "Say bye."}\n')
    kept = api.predict(jsonl=handle_file(str(jsonl)), api_name="/arena_prompt_set")
    assert kept == {"prompt_set": "two", "prompts": 2, "pictures": 0}
    first = list(api.submit(prompt_set="two", max_tokens=2, seed=7, api_name="/arena_next"))
    assert (first[-1]["number"], first[-1]["count"], first[-1]["prompt"], first[-1]["done"]) == (1, 2, "Say hi.", True)
    api.predict(battle=first[-1]["battle"], vote="B", api_name="/arena_vote")
    second = list(api.submit(prompt_set="two", max_tokens=2, seed=7, api_name="/arena_next"))
    assert (second[-1]["number"], second[-1]["voted"], second[-1]["prompt"]) == (2, 1, "Say bye.")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "Fine."}\n{"images": []}\n')
    with pytest.raises(Exception, match='bad.jsonl, line 2: the object needs a "prompt" with text'):
        api.predict(jsonl=handle_file(str(bad)), api_name="/arena_prompt_set")
