"""The conversation panel's server-side helpers: download names, and which images may be shown again."""

import tempfile
from pathlib import Path

from app.web.history_panel import file_name, image_kept


def test_download_names_come_from_the_title():
    assert file_name("What is the capital of France?", "json") == "what-is-the-capital-of-france.json"
    assert file_name("¿…?", "md") == "conversation.md"
    assert len(file_name("x" * 200, "md")) == 40 + len(".md")


def test_only_uploads_the_server_still_has_are_shown_again(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "sign.png"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(b"png")
    assert image_kept(str(upload))
    assert not image_kept(str(upload.with_name("gone.png")))  # removed since
    outside = Path(tempfile.mkdtemp(dir=tmp_path)) / "secret.png"
    outside.write_bytes(b"png")
    assert not image_kept(str(outside))  # a path the browser made up
    assert not image_kept(str(tmp_path / "uploads" / ".." / "secret.png"))


def test_a_markdown_export_reads_only_uploads_the_server_still_has(tmp_path, monkeypatch):
    from app.web.history_panel import read_upload

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "sign.png"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(b"png bytes")
    assert read_upload(str(upload)) == b"png bytes"
    assert read_upload(str(upload.with_name("gone.png"))) is None
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"secret")
    assert read_upload(str(outside)) is None  # a path the browser made up is not read


# The panel's handlers, called without a page: they take the browser's store and return what the panel shows.

import json  # noqa: E402

import gradio as gr  # noqa: E402
import pytest  # noqa: E402

from app.chat import chat_files  # noqa: E402
from app.chat import history as chats  # noqa: E402
from app.core.conversation import Conversation, ReplyVersion, Turn  # noqa: E402
from app.web import history_panel as panel  # noqa: E402


def answered(question: str = "What is in this picture?", reply: str = "A cat.") -> Conversation:
    return Conversation.asking(question).with_turn(Turn.reply(ReplyVersion(text=reply)))


def saved_store(conversation: Conversation) -> dict:
    return panel.on_save(chats.empty_store(), conversation)[0]


def test_a_saved_conversation_is_restored_with_its_list_entry():
    store = saved_store(answered())
    kept, current, messages, listed = panel.on_restore(store)
    assert current == answered()
    assert [m["content"] for m in messages if m["role"] == "user"] == ["What is in this picture?"]
    assert [label for label, _ in listed.choices] == [f"{chats.title_of(answered())} · 1 turn"]


def test_new_and_switch_change_what_is_shown_unless_a_reply_is_streaming():
    store = saved_store(answered())
    first = store["current"]
    with pytest.warns(UserWarning, match="reply"):
        assert panel.on_change(store, chats.new_chat, busy=True) == panel.UNCHANGED
    kept, current, messages, _ = panel.on_change(store, chats.new_chat, busy=False)
    assert kept["current"] != first and not current and messages == []
    shown = panel.on_switch(kept, first, busy=False)
    assert shown[0]["current"] == first and shown[1] == answered()
    with pytest.warns(UserWarning, match="press Stop before switching"):
        refused = panel.on_switch(kept, first, busy=True)
    assert refused[:3] == (gr.skip(),) * 3 and refused[3].value == kept["current"]


def test_switching_to_a_conversation_that_is_gone_keeps_the_current_one():
    store = saved_store(answered())
    with pytest.warns(UserWarning, match="no longer in this browser"):
        shown = panel.on_switch(store, "no-such-chat", busy=False)
    assert shown[:3] == (gr.skip(),) * 3 and shown[3].value == store["current"]


def test_exports_name_the_file_after_the_title_and_an_empty_conversation_exports_nothing():
    with pytest.warns(UserWarning, match="nothing to export"):
        assert panel.on_export(Conversation(), "json") == ""
    payload = json.loads(panel.on_export(answered(), "json"))
    assert payload["name"] == "what-is-in-this-picture.json" and payload["type"] == "application/json"
    assert chat_files.import_json(payload["text"])[1] == answered()
    markdown = json.loads(panel.on_export(answered(), "markdown"))
    assert markdown["type"] == "text/markdown" and "A cat." in markdown["text"]


def test_an_import_adds_the_conversation_and_deletes_the_upload(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "chat.json"
    upload.parent.mkdir(parents=True)
    upload.write_text(chat_files.export_json(answered(), "Cat"))
    kept, current, _, listed = panel.on_import(str(upload), chats.empty_store(), busy=False)
    assert current == answered() and "Cat · 1 turn" in [label for label, _ in listed.choices]
    assert not upload.exists()


def test_an_import_that_is_too_big_or_not_an_export_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    folder = tmp_path / "uploads" / "abc"
    folder.mkdir(parents=True)
    big = folder / "big.json"
    big.write_bytes(b" " * (panel.MAX_IMPORT_BYTES + 1))
    with pytest.warns(UserWarning, match=f"may be at most {panel.MAX_IMPORT_BYTES:,} bytes"):
        assert panel.on_import(str(big), chats.empty_store(), busy=False) == panel.UNCHANGED
    broken = folder / "broken.json"
    broken.write_text("{not json")
    with pytest.warns(UserWarning, match="broken.json is not a conversation file"):
        assert panel.on_import(str(broken), chats.empty_store(), busy=False) == panel.UNCHANGED
    assert not big.exists() and not broken.exists()
    waiting = folder / "waiting.json"
    waiting.write_text(chat_files.export_json(answered()))
    with pytest.warns(UserWarning, match="press Stop before switching"):
        assert panel.on_import(str(waiting), chats.empty_store(), busy=True) == panel.UNCHANGED


def test_a_json_export_carries_its_pictures_and_an_import_shows_them_again(tmp_path, monkeypatch):
    """JSON export embeds the picture (it kept only the name: "[image chelsea.png: not kept]" after import); the
    import stores it where uploads are and the conversation shows it; the same file imported twice is kept once;
    a picture over the limit is named with a note."""
    import json

    from PIL import Image

    from app.chat import history as chats
    from app.core.conversation import Conversation, Media, ReplyVersion, Turn
    from app.web import history_panel as panel

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "cat.png"
    upload.parent.mkdir(parents=True)
    Image.new("RGB", (40, 30), "orange").save(upload)
    talk = Conversation((Turn.user("What is it?", (Media.of(str(upload)),)), Turn.reply(ReplyVersion("A cat."))))
    exported = chat_files.export_json(talk, "Cat", panel.read_upload)
    (media,) = json.loads(exported)["turns"][0]["media"]
    assert media["data"].startswith("data:image/png;base64,") and "path" not in media

    upload.unlink()  # a fresh browser, or the server's uploads cleared since: the file brings the picture back
    title, imported = chat_files.import_json(exported, "cat.json", keep=panel.keep_picture)
    (picture,) = imported.turns[0].media
    assert panel.image_kept(picture.path) and Image.open(picture.path).size == (40, 30)
    store, added = chats.add_imported(chats.empty_store(), title, imported)
    assert added and len(store["chats"]) == 1  # the empty "New chat" it replaced is not kept
    again, added = chats.add_imported(store, title,
                                      chat_files.import_json(exported, "cat.json", keep=panel.keep_picture)[1])
    assert not added and len(again["chats"]) == 1

    monkeypatch.setattr(chat_files, "MAX_EMBED_BYTES", 10)
    big = Image.new("RGB", (40, 30), "blue")
    upload.parent.mkdir(parents=True, exist_ok=True)
    big.save(upload)
    (left,) = json.loads(chat_files.export_json(talk, "Cat", panel.read_upload))["turns"][0]["media"]
    assert "data" not in left and "too big to embed" in left["note"]


def test_an_embedded_file_that_is_no_picture_is_refused_by_name(tmp_path, monkeypatch):
    import base64
    import json

    import pytest

    from app.core.errors import InvalidRequest
    from app.web import history_panel as panel

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    raw = {"format": chat_files.FORMAT, "version": 2, "turns": [{"role": "user", "text": "x", "media": [
        {"kind": "image", "name": "evil.png", "data": "data:image/png;base64," + base64.b64encode(b"MZ...").decode()}]}]}
    with pytest.raises(InvalidRequest, match="evil.png"):
        chat_files.import_json(json.dumps(raw), "chat.json", keep=panel.keep_picture)
    assert not (tmp_path / "uploads" / panel.IMPORTED_FOLDER).exists() or \
        not any((tmp_path / "uploads" / panel.IMPORTED_FOLDER).iterdir())


def test_switching_away_from_an_empty_new_chat_does_not_keep_it():
    from app.chat import history as chats
    from app.core.conversation import Conversation, ReplyVersion, Turn

    talk = Conversation((Turn.user("hi"), Turn.reply(ReplyVersion("Hello."))))
    store = chats.save_current(chats.empty_store(), talk, lambda _: True)
    written = store["current"]
    store = chats.new_chat(store)
    assert len(store["chats"]) == 2
    store = chats.switch(store, written)
    assert [c["id"] for c in store["chats"]] == [written]


def test_rename_names_the_shown_conversation_before_its_save_has_landed():
    store = chats.empty_store()  # nothing saved yet: the save after the reply is pending
    shown = answered("Name a fruit.", "Apple.")
    _, title = panel.on_rename_open(store, shown)
    assert title == "Name a fruit."
    kept, _, _ = panel.on_rename(store, shown, "Groceries")
    (chat,) = [c for c in kept["chats"] if c["id"] == kept["current"]]
    assert chat["title"] == "Groceries" and chats.current_conversation(kept) == shown


def two_conversations() -> tuple[dict, str, str]:
    """A store holding a conversation about France, then one about a fruit (shown): (store, france, fruit)."""
    store = saved_store(answered("What is the capital of France?", "Paris."))
    france = store["current"]
    store = panel.on_save(chats.new_chat(store), answered("Name a fruit.", "Apple."))[0]
    return store, france, store["current"]


def test_new_pick_and_import_right_after_a_reply_keep_the_reply_whose_save_has_not_landed(tmp_path, monkeypatch):
    """The store the browser sends may not hold the last reply yet (its save follows the reply's event): New, a pick
    in the list and an import save the conversation the page shows first (a loaded run lost it to New)."""
    first = answered("What is the capital of France?", "Paris.")
    before_the_save = panel.on_save(chats.empty_store(), Conversation())[0]  # the empty chat, as first saved
    made_new = panel.on_change(before_the_save, chats.new_chat, busy=False, current=first)[0]
    assert [c["title"] for c in made_new["chats"]][1:] == ["What is the capital of France?"]
    assert chats.found(made_new, "capital")
    other = panel.on_change(saved_store(answered("Name a colour.", "Red.")), chats.new_chat, busy=False)[0]
    behind = {**other, "current": other["chats"][1]["id"]}  # the colour chat shown, its reply not saved yet
    picked = panel.on_pick(behind, other["chats"][0]["id"], False, answered("Name a colour.", "Blue."))[0]
    colour = next(c for c in picked["chats"] if c["title"] == "Name a colour.")
    assert chats.conversation_of(colour["conversation"]) == answered("Name a colour.", "Blue.")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "chat.json"
    upload.parent.mkdir(parents=True)
    upload.write_text(chat_files.export_json(answered(), "Cat"))
    imported = panel.on_import(str(upload), before_the_save, busy=False, current=first)[0]
    assert chats.found(imported, "capital") and "Cat" in [c["title"] for c in imported["chats"]]


def test_a_search_narrows_the_list_and_keeps_the_shown_conversation_chosen_when_it_is_found():
    store, france, fruit = two_conversations()
    narrowed, note = panel.on_search(store, "apple")  # a word of the shown conversation's reply
    assert [chat_id for _, chat_id in narrowed.choices] == [fruit] and narrowed.value == fruit
    assert note.visible is False
    assert [chat_id for _, chat_id in panel.on_search(store, "  NAME   fruit ")[0].choices] == [fruit]


def test_a_search_that_misses_the_shown_conversation_chooses_none_and_picking_one_switches():
    store, france, fruit = two_conversations()
    narrowed, _ = panel.on_search(store, "capital")
    assert [label for label, _ in narrowed.choices] == ["What is the capital of France? · 1 turn"]
    assert narrowed.value is None  # the chat still shows the other one: nothing chosen until the person picks
    assert panel.on_pick(store, None, busy=False)[:4] == (gr.skip(),) * 4  # leaving the list unpicked changes nothing
    shown = panel.on_pick(store, france, busy=False)  # picking it: the list's own switch
    assert shown[0]["current"] == france and shown[1] == answered("What is the capital of France?", "Paris.")
    assert [chat_id for _, chat_id in shown[3].choices] == [fruit, france]  # the whole list again
    assert shown[4] == ""  # and the search box emptied to match it
    with pytest.warns(UserWarning, match="press Stop before switching"):
        refused = panel.on_pick(store, france, busy=True)
    assert refused[:3] == (gr.skip(),) * 3 and refused[3].value == fruit and refused[4] == ""


def test_a_search_that_finds_nothing_says_so_and_an_empty_one_lists_every_conversation():
    store, france, fruit = two_conversations()
    nothing, note = panel.on_search(store, " xyz  ")
    assert nothing.choices == [] and nothing.value is None
    assert note.visible is True and note.value == "No conversation mentions 'xyz'."
    assert panel.on_search(store, "a*b [c]")[1].value == r"No conversation mentions 'a\*b \[c\]'."  # as typed
    assert panel.on_pick(store, nothing.value, busy=False) == (gr.skip(),) * 5  # the emptied list left: no switch
    for query in ("", "   ", None):
        every, note = panel.on_search(store, query)
        assert [chat_id for _, chat_id in every.choices] == [fruit, france] and every.value == fruit
        assert note.visible is False
