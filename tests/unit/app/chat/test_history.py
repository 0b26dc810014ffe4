"""Conversations kept in the browser: the stored list. (Their JSON: test_conversation_json.py; files:
test_chat_files.py; files and lists older apps wrote: tests/unit/app/web/test_legacy_chats.py.)"""

import pytest

from app.chat import history as chats
from app.chat.conversation_json import conversation_dict
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from tests.unit.app.chat.conversation_samples import PICTURE, TALK, keep_all, keep_none


def test_save_switch_new_delete():
    store = chats.save_current(chats.empty_store(), TALK, keep_all)
    first = store["current"]
    assert store["version"] == 2 and chats.current_conversation(store) == TALK
    assert chats.choices(store) == [("What is the capital of France? · 1 turn", first)]
    store = chats.new_chat(store)
    assert store["current"] != first and chats.current_conversation(store) == Conversation()
    assert chats.new_chat(store) == store  # an empty chat is reused, not piled up
    second = Conversation((Turn.user("Second"),))
    store = chats.save_current(store, second, keep_all)
    assert [label for label, _ in chats.choices(store)] == ["Second · 1 turn",
                                                           "What is the capital of France? · 1 turn"]
    store = chats.switch(store, first)
    assert chats.current_conversation(store) == TALK
    store = chats.delete_current(store)
    assert chats.current_conversation(store) == second
    store = chats.delete_current(store)
    assert chats.current_conversation(store) == Conversation() and len(store["chats"]) == 1
    with pytest.raises(InvalidRequest, match="no longer in this browser"):
        chats.switch(store, first)


def test_a_picture_the_server_no_longer_has_keeps_its_name_only():
    store = chats.save_current(chats.empty_store(), Conversation((PICTURE,)), keep_none)
    assert chats.current_conversation(store).turns[0].media == (Media("sign.png"),)
    kept = chats.normalise(chats.save_current(chats.empty_store(), Conversation((PICTURE,)), keep_all), keep_none)
    assert chats.current_conversation(kept).turns[0].images == ()  # a path the browser holds is checked again


def test_normalise_survives_anything_the_browser_held():
    for junk in (None, "text", [], {"chats": "x"}, {"chats": [{"id": ""}, 5]},
                 {"chats": [{"id": "a", "conversation": {"turns": [{"role": "system"}]}}]}):
        store = chats.normalise(junk, keep_all)
        assert chats.current_conversation(store) == Conversation() and len(store["chats"]) == 1
    saved = conversation_dict(TALK)
    kept = chats.normalise({"current": "gone", "chats": [{"id": "a", "conversation": saved, "updated": "x"}] * 50},
                           keep_all)
    assert kept["current"] == "a" and len(kept["chats"]) == chats.MAX_CHATS
    assert kept["chats"][0]["title"] == "What is the capital of France?"


def test_title_is_the_first_user_text_shortened():
    assert chats.title_of(Conversation()) == "New chat"
    long = chats.title_of(Conversation((Turn.user("word " * 40),)))
    assert len(long) == chats.TITLE_CHARS and long.endswith("…")


def test_the_list_counts_turns_not_images():
    talk = Conversation((Turn.user("What is the capital of France?", (Media.of("/a.png"), Media.of("/b.png"))),
                         *TALK.turns[1:], *TALK.turns * 2))
    store = chats.save_current(chats.empty_store(), talk, keep_all)
    assert chats.choices(store)[0][0] == "What is the capital of France? · 3 turns"


def test_the_list_shortens_a_long_title_so_the_count_shows():
    talk = Conversation((Turn.user("Please describe everything you can see in this photograph"),
                         Turn.reply(ReplyVersion("A harbour."))))
    store = chats.save_current(chats.empty_store(), talk, keep_all)
    label = chats.choices(store)[0][0]
    assert label == "Please describe everything yo… · 1 turn"
    assert store["chats"][0]["title"].startswith("Please describe everything you can see")  # the title itself is kept


def test_a_renamed_conversation_keeps_its_name_and_an_empty_one_names_it_by_its_message_again():
    store = chats.save_current(chats.empty_store(), TALK, keep_all)
    chat_id = store["current"]
    store = chats.rename(store, chat_id, "  Capitals\n quiz ")
    assert chats.choices(store) == [("Capitals quiz · 1 turn", chat_id)]  # one line
    longer = TALK.with_turn(Turn.user("And of Spain?"))
    store = chats.normalise(chats.save_current(store, longer, keep_all), keep_all)  # saved and read back
    assert store["chats"][0]["title"] == "Capitals quiz"
    store = chats.rename(store, chat_id, " ")
    assert store["chats"][0]["title"] == "What is the capital of France?"
    with pytest.raises(InvalidRequest, match="no longer in this browser"):
        chats.rename(store, "gone", "x")


def test_search_finds_titles_and_every_text_of_a_conversation():
    store = chats.save_current(chats.empty_store(), TALK, keep_all)
    france = store["current"]
    store = chats.save_current(chats.new_chat(store), Conversation((Turn.user("Name a colour."),)).edited(
        0, "Name a fruit."), keep_all)
    fruit = store["current"]
    store = chats.rename(store, fruit, "Shopping")
    assert [i for _, i in chats.found(store, "")] == [fruit, france]
    assert [i for _, i in chats.found(store, "PARIS")] == [france]  # a reply's words, any case
    assert [i for _, i in chats.found(store, "shop")] == [fruit]  # the title given
    assert [i for _, i in chats.found(store, "colour")] == [fruit]  # an earlier version of an edited message
    assert chats.found(store, "paris colour") == []  # every word
