"""Conversations kept in the browser: the stored list, the versioned JSON schema, export to JSON and Markdown and
import back. (Files and lists older apps wrote: tests/unit/app/web/test_legacy_chats.py.)"""

import json

import pytest

from app.chat import history as chats
from app.core.constants import MAX_CONVERSATION_MESSAGES
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams


def keep_all(_path) -> bool:  # the server still has every image
    return True


def keep_none(_path) -> bool:
    return False


TALK = Conversation((Turn.user("What is the capital of France?"),
                     Turn.reply(ReplyVersion("Paris.", figures="2 tokens · base model · K"))))
CUT = ReplyVersion(text="Arr, the capital be", adapter="pirate", figures="4 tokens · pirate · K", cut_at=4,
                   sampling=SamplingParams(max_tokens=4, top_k=1), context=(0,))
WHOLE = ReplyVersion(text="Paris.", figures="2 tokens · base model · K", saw=(("Labels: tabby cat 91%", "Text: none found"),))
TWO = Turn("assistant", versions=(CUT, WHOLE), shown=0)
PICTURE = Turn.user("What is it?", (Media.of("/tmp/gradio/x/sign.png"),))


def test_the_schema_round_trips_every_field():
    talk = Conversation((PICTURE, TWO))
    raw = chats.conversation_dict(talk)
    assert raw["turns"][0] == {"role": "user", "text": "What is it?",
                               "media": [{"kind": "image", "name": "sign.png", "path": "/tmp/gradio/x/sign.png"}]}
    assert raw["turns"][1]["versions"][0]["sampling"]["max_tokens"] == 4
    assert chats.conversation_of(json.loads(json.dumps(raw))) == talk
    assert chats.conversation_dict(talk, paths=False)["turns"][0]["media"] == [{"kind": "image", "name": "sign.png"}]


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
    saved = chats.conversation_dict(TALK)
    kept = chats.normalise({"current": "gone", "chats": [{"id": "a", "conversation": saved, "updated": "x"}] * 50},
                           keep_all)
    assert kept["current"] == "a" and len(kept["chats"]) == chats.MAX_CHATS
    assert kept["chats"][0]["title"] == "What is the capital of France?"


def test_title_is_the_first_user_text_shortened():
    assert chats.title_of(Conversation()) == "New chat"
    long = chats.title_of(Conversation((Turn.user("word " * 40),)))
    assert len(long) == chats.TITLE_CHARS and long.endswith("…")


def test_json_export_imports_back_with_its_version_and_every_field():
    talk = Conversation((PICTURE, TWO))
    exported = chats.export_json(talk)
    data = json.loads(exported)
    assert data["format"] == chats.FORMAT and data["version"] == chats.VERSION == 2
    assert data["turns"][0]["media"] == [{"kind": "image", "name": "sign.png"}]  # the file stays on this server
    title, imported = chats.import_json(exported, "chat.json")
    assert title == "What is it?"
    assert imported == Conversation((Turn.user("What is it?", (Media("sign.png"),)), TWO))


def test_markdown_export_reads_like_the_conversation():
    text = chats.export_markdown(TALK, "Capitals")
    assert text.startswith("# Capitals\n")
    assert "## You\n\nWhat is the capital of France?" in text and "## Assistant\n\nParis." in text


@pytest.mark.parametrize("text, message", [
    ("not json", "chat.json is not a conversation file: it is not JSON"),
    ('{"turns": []}', 'it has no "format"'),
    (json.dumps({"format": chats.FORMAT, "version": 2, "turns": []}), "it holds no messages"),
    (json.dumps({"format": chats.FORMAT, "version": 2, "turns": [{"role": "system", "text": "x"}]}),
     "turn 1 is damaged"),
    (json.dumps({"format": chats.FORMAT, "version": 2, "turns": [{"role": "user", "text": {"path": "/etc/passwd"}}]}),
     "turn 1 is damaged"),
    (json.dumps({"format": chats.FORMAT, "version": 2, "turns": [{"role": "user", "text": "x"}] *
                 (MAX_CONVERSATION_MESSAGES + 1)}), "at most 1,000 are kept"),
    (json.dumps({"format": chats.FORMAT, "version": 2, "turns": [{"role": "user", "text": "x"},
                                                                 {"role": "assistant", "versions": []}]}),
     "turn 2 is damaged"),
    (json.dumps({"format": chats.FORMAT, "version": 1, "messages": [{"role": "user", "content": "x"}]}),
     "written by an older app"),  # without a reader for older files
])
def test_bad_imports_say_what_is_wrong(text, message):
    with pytest.raises(InvalidRequest, match=message):
        chats.import_json(text, "chat.json")


def test_an_imported_path_is_never_a_file_to_read():
    """A file may name any path: the import keeps only names, so nothing reads it as an upload."""
    raw = {"format": chats.FORMAT, "version": 2,
           "turns": [{"role": "user", "text": "x", "media": [{"kind": "image", "name": "p", "path": "/etc/passwd"}]}]}
    _, imported = chats.import_json(json.dumps(raw), "chat.json")
    store, added = chats.add_imported(chats.empty_store(), "x", imported)
    assert added
    assert chats.current_conversation(chats.normalise(store, keep_none)).turns[0].images == ()


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


def test_markdown_export_is_clean_markdown_with_images_and_versions():
    picture = b"\x89PNG fake bytes"
    talk = Conversation((Turn.user("What animal is this?", (Media.of("/tmp/gradio/x/chelsea.png"),
                                                            Media.of("/tmp/gradio/y/gone.png"))),
                         Turn("assistant", versions=(CUT, WHOLE), shown=1)))
    text = chats.export_markdown(talk, "Cat", lambda path: picture if "chelsea" in path else None)
    assert "<" not in text
    assert "![chelsea.png](data:image/png;base64,iVBORyBmYWtlIGJ5dGVz)" in text
    assert "(image gone.png: no longer on the server)" in text and text.count("## You") == 1
    assert "## Assistant (version 2 of 2, the one shown)\n\nParis." in text
    assert "*2 tokens · base model · K*" in text and "What the model saw:\n\n- Labels: tabby cat 91%" in text
    assert "### Version 1 of 2\n\nArr, the capital be" in text and "cut at the 4-token limit" in text
    big = chats.export_markdown(Conversation(talk.turns[:1]), "Cat", lambda _: b"x" * (chats.MAX_EMBED_BYTES + 1))
    assert "too big to embed" in big and "base64" not in big
