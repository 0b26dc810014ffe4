"""Conversations kept in the browser: the stored list, export to JSON and Markdown, import back."""

import json

import pytest

from app.chat import history as chats
from app.chat.versions import Reply, ReplyVersion, reply_message, reply_of
from app.core.constants import MAX_CONVERSATION_MESSAGES
from app.core.errors import InvalidRequest
from setup.paths import PROJECT_ROOT

BEFORE_VERSIONS = PROJECT_ROOT / "tests/data/conversations/exported-before-versions.json"  # today's app wrote it


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
    assert chats.choices(store) == [("What is the capital of France? · 1 turn", first)]
    store = chats.new_chat(store)
    assert store["current"] != first and chats.current_messages(store) == []
    assert chats.new_chat(store) == store  # an empty chat is reused, not piled up
    store = chats.save_current(store, [{"role": "user", "content": "Second"}], keep_all)
    assert [label for label, _ in chats.choices(store)] == ["Second · 1 turn",
                                                           "What is the capital of France? · 1 turn"]
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


def test_the_list_counts_turns_not_images():
    """Three questions, one with two images: 3 turns (Gradio holds 8 message dicts)."""
    talk = [{"role": "user", "content": {"path": "/tmp/gradio/x/a.png"}},
            {"role": "user", "content": {"path": "/tmp/gradio/x/b.png"}}, *TALK * 3]
    store = chats.save_current(chats.empty_store(), talk, keep_all)
    assert len(chats.current_messages(store)) == 8
    assert chats.choices(store)[0][0] == "What is the capital of France? · 3 turns"


def test_the_list_shortens_a_long_title_so_the_count_shows():
    talk = [{"role": "user", "content": "Please describe everything you can see in this photograph"},
            {"role": "assistant", "content": "A harbour."}]
    store = chats.save_current(chats.empty_store(), talk, keep_all)
    label = chats.choices(store)[0][0]
    assert label == "Please describe everything yo… · 1 turn"
    assert store["chats"][0]["title"].startswith("Please describe everything you can see")  # the title itself is kept


CUT = ReplyVersion(text="Arr, the capital be", adapter="pirate", figures="4 tokens · pirate · K", cut_at=4)
WHOLE = ReplyVersion(text="Paris.", figures="2 tokens · base model · K",
                     saw=(("Labels: tabby cat 91%", "Text: none found"),))
TWO = Reply((CUT, WHOLE), shown=0)


def test_versions_are_kept_in_the_browser_and_in_the_json_export():
    talk = [TALK[0], reply_message(TWO)]
    store = chats.normalise(chats.save_current(chats.empty_store(), talk, keep_all), keep_all)
    assert reply_of(chats.current_messages(store)[1]) == TWO
    exported = json.loads(chats.export_json(talk))
    assert exported["messages"][1]["reply"]["shown"] == 0 and len(exported["messages"][1]["reply"]["versions"]) == 2
    assert exported["messages"][1]["content"].startswith("Arr, the capital be")  # what older apps read
    _, messages = chats.import_json(json.dumps(exported), "chat.json")
    assert reply_of(messages[1]) == TWO


def test_an_export_written_before_versions_still_imports():
    title, messages = chats.import_json(BEFORE_VERSIONS.read_text(), BEFORE_VERSIONS.name)
    assert title == "What animal is this?" and len(messages) == 5
    assert [m["role"] for m in messages] == ["user", "user", "assistant", "user", "assistant"]
    assert messages[2]["content"].startswith("Arr, a fine cat it be!")
    from app.chat.turns import history_for, reply_adapter

    assert reply_adapter(messages[2]) == "pirate" and reply_adapter(messages[4]) is None
    assert history_for(messages[:4], None) == [messages[3]] and history_for(messages[:4], "pirate") == messages[:4]
    markdown = chats.export_markdown(messages, title)
    assert "<" not in markdown and "*12 tokens · 10.0 tokens/s" in markdown and "- Labels: tabby cat 91%" in markdown


def test_a_damaged_reply_record_is_named():
    bad = {"format": chats.FORMAT, "messages": [TALK[0], {"role": "assistant", "content": "x", "reply": {"versions": []}}]}
    with pytest.raises(InvalidRequest, match="reply 2 is damaged"):
        chats.import_json(json.dumps(bad), "chat.json")


def test_markdown_export_is_clean_markdown_with_images_and_versions():
    picture = b"\x89PNG fake bytes"
    talk = [{"role": "user", "content": {"path": "/tmp/gradio/x/chelsea.png"}},
            {"role": "user", "content": {"path": "/tmp/gradio/y/gone.png"}},
            {"role": "user", "content": "What animal is this?"}, reply_message(Reply((CUT, WHOLE), shown=1))]
    text = chats.export_markdown(talk, "Cat", lambda path: picture if "chelsea" in path else None)
    assert "<" not in text
    assert "![chelsea.png](data:image/png;base64,iVBORyBmYWtlIGJ5dGVz)" in text
    assert "(image gone.png: no longer on the server)" in text and text.count("## You") == 1
    assert "## Assistant (version 2 of 2, the one shown)\n\nParis." in text
    assert "*2 tokens · base model · K*" in text and "What the model saw:\n\n- Labels: tabby cat 91%" in text
    assert "### Version 1 of 2\n\nArr, the capital be" in text and "cut at the 4-token limit" in text
    big = chats.export_markdown(talk[:1], "Cat", lambda _: b"x" * (chats.MAX_EMBED_BYTES + 1))
    assert "too big to embed" in big and "base64" not in big
