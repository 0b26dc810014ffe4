"""A conversation as a file: JSON export that imports back, Markdown export, imports refused with a reason."""

import json

import pytest

from app.chat import chat_files, conversation_json
from app.chat import history as chats
from app.core.constants import MAX_CONVERSATION_MESSAGES
from app.core.conversation import Conversation, Media, Turn
from app.core.errors import InvalidRequest
from tests.unit.app.chat.conversation_samples import CUT, PICTURE, TALK, TWO, WHOLE, keep_none


def test_json_export_imports_back_with_its_version_and_every_field():
    talk = Conversation((PICTURE, TWO))
    exported = chat_files.export_json(talk)
    data = json.loads(exported)
    assert data["format"] == chat_files.FORMAT and data["version"] == conversation_json.VERSION == 2
    assert data["turns"][0]["media"] == [{"kind": "image", "name": "sign.png"}]  # the file stays on this server
    title, imported = chat_files.import_json(exported, "chat.json")
    assert title == "What is it?"
    assert imported == Conversation((Turn.user("What is it?", (Media("sign.png"),)), TWO))


def test_markdown_export_reads_like_the_conversation():
    text = chat_files.export_markdown(TALK, "Capitals")
    assert text.startswith("# Capitals\n")
    assert "## You\n\nWhat is the capital of France?" in text and "## Assistant\n\nParis." in text


@pytest.mark.parametrize("text, message", [
    ("not json", "chat.json is not a conversation file: it is not JSON"),
    ('{"turns": []}', 'it has no "format"'),
    (json.dumps({"format": chat_files.FORMAT, "version": 2, "turns": []}), "it holds no messages"),
    (json.dumps({"format": chat_files.FORMAT, "version": 2, "turns": [{"role": "system", "text": "x"}]}),
     "turn 1 is damaged"),
    (json.dumps({"format": chat_files.FORMAT, "version": 2, "turns": [{"role": "user", "text": {"path": "/etc/passwd"}}]}),
     "turn 1 is damaged"),
    (json.dumps({"format": chat_files.FORMAT, "version": 2, "turns": [{"role": "user", "text": "x"}] *
                 (MAX_CONVERSATION_MESSAGES + 1)}), "at most 1,000 are kept"),
    (json.dumps({"format": chat_files.FORMAT, "version": 2, "turns": [{"role": "user", "text": "x"},
                                                                 {"role": "assistant", "versions": []}]}),
     "turn 2 is damaged"),
    (json.dumps({"format": chat_files.FORMAT, "version": 1, "messages": [{"role": "user", "content": "x"}]}),
     "written by an older app"),  # without a reader for older files
])
def test_bad_imports_say_what_is_wrong(text, message):
    with pytest.raises(InvalidRequest, match=message):
        chat_files.import_json(text, "chat.json")


def test_an_imported_path_is_never_a_file_to_read():
    """A file may name any path: the import keeps only names, so nothing reads it as an upload."""
    raw = {"format": chat_files.FORMAT, "version": 2,
           "turns": [{"role": "user", "text": "x", "media": [{"kind": "image", "name": "p", "path": "/etc/passwd"}]}]}
    _, imported = chat_files.import_json(json.dumps(raw), "chat.json")
    store, added = chats.add_imported(chats.empty_store(), "x", imported)
    assert added
    assert chats.current_conversation(chats.normalise(store, keep_none)).turns[0].images == ()


def test_markdown_export_is_clean_markdown_with_images_and_versions():
    picture = b"\x89PNG fake bytes"
    talk = Conversation((Turn.user("What animal is this?", (Media.of("/tmp/gradio/x/chelsea.png"),
                                                            Media.of("/tmp/gradio/y/gone.png"))),
                         Turn("assistant", versions=(CUT, WHOLE), shown=1)))
    text = chat_files.export_markdown(talk, "Cat", lambda path: picture if "chelsea" in path else None)
    assert "<" not in text
    assert "![chelsea.png](data:image/png;base64,iVBORyBmYWtlIGJ5dGVz)" in text
    assert "(image gone.png: no longer on the server)" in text and text.count("## You") == 1
    assert "## Assistant (version 2 of 2, the one shown)\n\nParis." in text
    assert "*2 tokens · base model · K*" in text and "What the model saw:\n\n- Labels: tabby cat 91%" in text
    assert "### Version 1 of 2\n\nArr, the capital be" in text and "cut at the 4-token limit" in text
    big = chat_files.export_markdown(Conversation(talk.turns[:1]), "Cat", lambda _: b"x" * (chat_files.MAX_EMBED_BYTES + 1))
    assert "too big to embed" in big and "base64" not in big


def test_markdown_export_says_which_version_of_an_edited_message_is_shown():
    text = chat_files.export_markdown(TALK.edited(0, "What is the capital of Italy?"), "Capitals")
    assert "## You (version 2 of 2, the one shown)\n\nWhat is the capital of Italy?" in text and "Paris" not in text
