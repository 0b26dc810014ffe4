"""Conversations older apps wrote still open: both exported files kept in tests/data (one from before reply
versions, one from before the typed conversation) and the lists those apps kept in the browser."""

import json

import pytest

from app.chat import chat_files
from app.chat import history as chats
from app.core.conversation import ContextPolicy, Media, ReplyVersion
from app.core.errors import InvalidRequest
from app.web.legacy_chats import REPLY_ID, conversation_of_file, conversation_of_messages
from setup.paths import PROJECT_ROOT

FILES = PROJECT_ROOT / "tests/data/conversations"
BEFORE_VERSIONS = FILES / "exported-before-versions.json"  # the app before reply versions wrote it
BEFORE_TYPED = FILES / "exported-before-typed.json"  # the app before the typed conversation wrote it


def keep_all(_path) -> bool:
    return True


def test_an_export_written_before_versions_still_imports():
    title, talk = chat_files.import_json(BEFORE_VERSIONS.read_text(), BEFORE_VERSIONS.name, conversation_of_file)
    assert title == "What animal is this?" and len(talk) == 4
    assert [t.role for t in talk.turns] == ["user", "assistant", "user", "assistant"]
    assert talk.turns[0].media == (Media("chelsea.png"),) and talk.turns[0].text == "What animal is this?"
    pirate = talk.turns[1].current
    assert pirate.text == "Arr, a fine cat it be!" and pirate.adapter == "pirate"  # a field, read once from the file
    assert pirate.figures.startswith("12 tokens · 10.0 tokens/s") and pirate.saw[0][0] == "Labels: tabby cat 91%"
    assert talk.turns[3].adapter is None and talk.turns[3].text == "The capital of France is Paris."
    policy = ContextPolicy(keep_pictures=True)
    assert talk.context_for_reply(policy, None).places == (2, 3)
    markdown = chat_files.export_markdown(talk, title)
    assert "<" not in markdown and "*12 tokens · 10.0 tokens/s" in markdown and "- Labels: tabby cat 91%" in markdown


def test_an_export_written_before_the_typed_conversation_still_imports():
    title, talk = chat_files.import_json(BEFORE_TYPED.read_text(), BEFORE_TYPED.name, conversation_of_file)
    assert title == "What is in this picture?" and [t.role for t in talk.turns] == ["user", "assistant"] * 3
    rocket, regenerated, coffee, french, story, cut = talk.turns
    assert rocket.media == (Media("rocket.png"),) and rocket.text == "What is in this picture?"
    assert len(regenerated.versions) == 2 and regenerated.shown == 1 and regenerated.current.cut_at == 48
    assert regenerated.versions[0].text.startswith("This picture is a rocket") and regenerated.versions[0].cut_at is None
    assert coffee.media == (Media("coffee.png"),) and french.adapter == "french"
    assert french.current.saw[0][0] == "Labels: espresso 95%"
    assert story.media == () and cut.current == ReplyVersion(
        "In the sleepy town of Rav", figures=cut.current.figures, cut_at=6)
    again = chat_files.import_json(chat_files.export_json(talk, title), "again.json")  # and it exports as version 2
    assert again == (title, talk)


def test_a_damaged_reply_record_and_a_bad_message_are_named():
    bad = {"format": chat_files.FORMAT, "version": 1, "messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "x", "reply": {"versions": []}}]}
    with pytest.raises(InvalidRequest, match="reply 2 is damaged"):
        chat_files.import_json(json.dumps(bad), "chat.json", conversation_of_file)
    bad = {"format": chat_files.FORMAT, "messages": [{"role": "user", "content": {"path": "/etc/passwd"}}]}
    with pytest.raises(InvalidRequest, match="message 1 is not"):
        chat_files.import_json(json.dumps(bad), "chat.json", conversation_of_file)


def test_a_list_an_older_app_kept_in_the_browser_opens():
    """Gradio's message shapes, a reply's record in its metadata, a reply from before records."""
    record = {"shown": 0, "versions": [{"text": "A sign.", "adapter": "pirate", "figures": "2 tokens · pirate · K"}]}
    messages = [{"role": "user", "content": [{"type": "file", "file": {"path": "/tmp/gradio/x/a.png"}}]},
                {"role": "user", "content": [{"type": "text", "text": "What is it?"}]},
                {"role": "assistant", "content": "A sign.", "metadata": {"id": REPLY_ID + json.dumps(record)}},
                {"role": "user", "content": "And now?"},
                {"role": "assistant", "content": 'Arr!\n\n<small class="reply-figures">2 tokens · pirate · K</small>'
                                                 "\n\n*adapter: pirate*"},
                {"role": "system", "content": "dropped"}, "junk"]
    talk = conversation_of_messages(messages)
    assert talk.turns[0].media == (Media.of("/tmp/gradio/x/a.png"),) and talk.turns[0].text == "What is it?"
    assert talk.turns[1].current.adapter == "pirate" and talk.turns[1].text == "A sign."
    assert (talk.turns[3].text, talk.turns[3].adapter, talk.turns[3].current.figures) == ("Arr!", "pirate",
                                                                                        "2 tokens · pirate · K")
    stored = {"version": 1, "current": "a", "chats": [{"id": "a", "title": "x", "updated": 1.0, "messages": messages}]}
    kept = chats.normalise(stored, keep_all, conversation_of_messages)
    assert kept["version"] == 2 and chats.current_conversation(kept) == talk
