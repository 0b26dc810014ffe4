"""Conversations kept in the browser: the stored list, export to JSON and Markdown, import back."""

import json

import pytest

from app.chat import history as chats
from app.core.constants import MAX_CONVERSATION_MESSAGES
from app.core.errors import InvalidRequest


def keep_all(_path) -> bool:  # the server still has every image
    return True


def keep_none(_path) -> bool:
    return False


TALK = [{"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris.\n\n<small class=\"reply-figures\">2 tokens · base model · K</small>"}]


def test_gradio_message_shapes_become_plain_ones():
    shown = [{"role": "user", "content": [{"type": "file", "file": {"path": "/tmp/gradio/x/a.png"}}]},
             {"role": "user", "content": [{"type": "text", "text": "What is it?"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "A sign."}]},
             {"role": "system", "content": "dropped"}, "junk"]
    assert chats.plain_messages(shown, keep_all) == [
        {"role": "user", "content": {"path": "/tmp/gradio/x/a.png"}},
        {"role": "user", "content": "What is it?"}, {"role": "assistant", "content": "A sign."}]
    assert chats.plain_messages(shown, keep_none)[0] == {"role": "user", "content": "[image a.png: not kept]"}


def test_save_switch_new_delete():
    store = chats.save_current(chats.empty_store(), TALK, keep_all)
    first = store["current"]
    assert chats.current_messages(store) == TALK
    assert chats.choices(store) == [("What is the capital of France? · 2 messages", first)]
    store = chats.new_chat(store)
    assert store["current"] != first and chats.current_messages(store) == []
    assert chats.new_chat(store) == store  # an empty chat is reused, not piled up
    store = chats.save_current(store, [{"role": "user", "content": "Second"}], keep_all)
    assert [label for label, _ in chats.choices(store)] == ["Second · 1 message",
                                                           "What is the capital of France? · 2 messages"]
    store = chats.switch(store, first)
    assert chats.current_messages(store) == TALK
    store = chats.delete_current(store)
    assert chats.current_messages(store) == [{"role": "user", "content": "Second"}]
    store = chats.delete_current(store)
    assert chats.current_messages(store) == [] and len(store["chats"]) == 1
    with pytest.raises(InvalidRequest, match="no longer in this browser"):
        chats.switch(store, first)


def test_normalise_survives_anything_the_browser_held():
    for junk in (None, "text", [], {"chats": "x"}, {"chats": [{"id": ""}, 5]}):
        store = chats.normalise(junk, keep_all)
        assert chats.current_messages(store) == [] and len(store["chats"]) == 1
    kept = chats.normalise({"current": "gone", "chats": [{"id": "a", "messages": TALK, "updated": "x"}] * 50},
                           keep_all)
    assert kept["current"] == "a" and len(kept["chats"]) == chats.MAX_CHATS
    assert kept["chats"][0]["title"] == "What is the capital of France?"


def test_title_is_the_first_user_text_shortened():
    assert chats.title_of([]) == "New chat"
    long = chats.title_of([{"role": "user", "content": "word " * 40}])
    assert len(long) == chats.TITLE_CHARS and long.endswith("…")


def test_json_export_imports_back():
    shown = [{"role": "user", "content": {"path": "/tmp/gradio/x/sign.png"}}, *TALK]
    exported = chats.export_json(shown)
    data = json.loads(exported)
    assert data["format"] == chats.FORMAT and data["messages"][0] == {"role": "user", "content": "[image sign.png]"}
    title, messages = chats.import_json(exported, "chat.json")
    assert title == "What is the capital of France?"
    assert messages == [{"role": "user", "content": "[image sign.png]"}, *TALK]


def test_markdown_export_reads_like_the_conversation():
    text = chats.export_markdown(TALK, "Capitals")
    assert text.startswith("# Capitals\n")
    assert "## You\n\nWhat is the capital of France?" in text and "## Assistant\n\nParis." in text


@pytest.mark.parametrize("text, message", [
    ("not json", "chat.json is not a conversation file: it is not JSON"),
    ('{"messages": []}', 'it has no "format"'),
    (json.dumps({"format": chats.FORMAT, "messages": []}), "it holds no messages"),
    (json.dumps({"format": chats.FORMAT, "messages": [{"role": "system", "content": "x"}]}), "message 1 is not"),
    (json.dumps({"format": chats.FORMAT, "messages": [{"role": "user", "content": {"path": "/etc/passwd"}}]}),
     "message 1 is not"),
    (json.dumps({"format": chats.FORMAT, "messages": [{"role": "user", "content": "x"}] *
                 (MAX_CONVERSATION_MESSAGES + 1)}), "at most 1,000 are kept"),
])
def test_bad_imports_say_what_is_wrong(text, message):
    with pytest.raises(InvalidRequest, match=message):
        chats.import_json(text, "chat.json")
