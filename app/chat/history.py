"""Conversations kept in the person's browser: the stored list (switch, new, delete, an import added once). Pure
functions over the stored value; the server keeps none of it.

Stored value: {"version": 2, "current": id, "chats": [{"id", "title", "updated", "conversation", "named"?}]},
newest first ("named": a title the person gave it, kept over the first message's words); each conversation in app.chat.conversation_json's schema. What older apps stored (version 1: chat messages
with display text) is read by the caller's `older` reader (app.web.legacy_chats), the only place that reads that
display form. Files (export, import): app.chat.chat_files."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from app.chat.conversation_json import (
    VERSION,
    OlderReader,
    conversation_dict,
    conversation_of,
    kept_pictures,
    no_older,
)
from app.chat.messages import MSG_CHAT_GONE
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest

MAX_CHATS = 30  # the oldest go first
TITLE_CHARS = 48
LIST_TITLE_CHARS = 30  # with " · 12 turns" this fits the conversation list's box at 400 px (a browser test checks)
NEW_TITLE = "New chat"


def turns_count(conversation: Conversation) -> int:
    """The person's messages (a message's images are part of it)."""
    return sum(1 for turn in conversation.turns if not turn.is_reply)


def turns_text(count: int) -> str:
    return f"{count} turn{'' if count == 1 else 's'}"


def empty_store() -> dict:
    chat = _new_chat()
    return {"version": VERSION, "current": chat["id"], "chats": [chat]}


def _new_chat() -> dict:
    return {"id": uuid.uuid4().hex[:12], "title": NEW_TITLE, "updated": time.time(),
            "conversation": conversation_dict(Conversation())}


def title_of(conversation: Conversation) -> str:
    """The first text of the person, shortened; "New chat" for a conversation without one."""
    text = next((turn.text for turn in conversation.turns if not turn.is_reply and turn.text.strip()), "")
    text = " ".join(text.split())
    if not text:
        return NEW_TITLE
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1].rstrip() + "…"


def _stored_conversation(chat: dict, image_kept: Callable[[str], bool], older: OlderReader) -> Conversation:
    try:
        if "conversation" in chat:
            conversation = conversation_of(chat["conversation"])
        else:
            conversation = older(chat.get("messages"))
    except ValueError:
        conversation = Conversation()
    return kept_pictures(conversation, image_kept)


def normalise(stored: object, image_kept: Callable[[str], bool], older: OlderReader = no_older) -> dict:
    """The stored value as this app writes it, whatever the browser held (an older app's list, edited by hand):
    `older` reads a conversation an older app stored (its chat messages)."""
    if not isinstance(stored, dict) or not isinstance(stored.get("chats"), list):
        return empty_store()
    chats = []
    for chat in stored["chats"][:MAX_CHATS]:
        if not isinstance(chat, dict) or not isinstance(chat.get("id"), str) or not chat["id"]:
            continue
        conversation = _stored_conversation(chat, image_kept, older)
        updated = chat.get("updated")
        named = _title(chat.get("named"))
        chats.append({"id": chat["id"][:40], "title": named or title_of(conversation), **({"named": named} if named else {}),
                      "updated": float(updated) if isinstance(updated, int | float) else 0.0,
                      "conversation": conversation_dict(conversation)})
    if not chats:
        return empty_store()
    ids = [c["id"] for c in chats]
    current = stored.get("current") if stored.get("current") in ids else ids[0]
    return {"version": VERSION, "current": current, "chats": chats}


def current_conversation(store: dict) -> Conversation:
    """The current conversation of a normalised store."""
    chat = next((c for c in store["chats"] if c["id"] == store["current"]), None)
    return conversation_of(chat["conversation"]) if chat else Conversation()


def save_current(store: dict, conversation: Conversation, image_kept: Callable[[str], bool]) -> dict:
    """The store with the current conversation replaced (moved to the top of the list)."""
    saved = conversation_dict(kept_pictures(conversation, image_kept))
    chat = next((c for c in store["chats"] if c["id"] == store["current"]), None) or _new_chat()
    if chat["conversation"] == saved and chat in store["chats"]:
        return store
    chat = {**chat, "conversation": saved, "title": chat.get("named") or title_of(conversation), "updated": time.time()}
    others = [c for c in store["chats"] if c["id"] != chat["id"]]
    return {**store, "current": chat["id"], "chats": [chat, *others][:MAX_CHATS]}


def new_chat(store: dict) -> dict:
    """The store with an empty conversation as the current one (the current one if it is empty already)."""
    if not current_conversation(store) and any(c["id"] == store["current"] for c in store["chats"]):
        return store
    chat = _new_chat()
    return {**store, "current": chat["id"], "chats": [chat, *store["chats"]][:MAX_CHATS]}


def switch(store: dict, chat_id: str) -> dict:
    """The store showing `chat_id`; an empty conversation left behind is not kept in the list."""
    if not any(c["id"] == chat_id for c in store["chats"]):
        raise InvalidRequest(MSG_CHAT_GONE)
    return {**store, "current": chat_id, "chats": _without_empty(store["chats"], keep=chat_id)}


def _without_empty(chat_list: list[dict], keep: str) -> list[dict]:
    """The list without the empty conversations ("New chat" entries nobody wrote in) but `keep`."""
    return [c for c in chat_list if c["id"] == keep or c["conversation"].get("turns")]


def delete_current(store: dict) -> dict:
    """The store without the current conversation; the next one (or a new empty one) becomes current."""
    others = [c for c in store["chats"] if c["id"] != store["current"]]
    if not others:
        return empty_store()
    return {**store, "current": others[0]["id"], "chats": others}


def choices(store: dict) -> list[tuple[str, str]]:
    """(label, id) per conversation, newest first, for a dropdown: the title shortened so that the count of turns
    stays in view on a phone."""
    def label(chat: dict) -> str:
        count = turns_count(conversation_of(chat["conversation"]))
        title = chat["title"]
        if len(title) > LIST_TITLE_CHARS:
            title = title[:LIST_TITLE_CHARS - 1].rstrip() + "…"
        return f"{title} · {turns_text(count)}" if count else title
    return [(label(c), c["id"]) for c in store["chats"]]


def add_imported(store: dict, title: str, conversation: Conversation) -> tuple[dict, bool]:
    """(the store showing the imported conversation, whether it was new): a conversation the list holds already
    (the same turns, pictures aside from where they are stored) is shown, not added twice."""
    same = conversation_dict(conversation, paths=False)
    for chat in store["chats"]:
        try:
            held = conversation_dict(conversation_of(chat["conversation"]), paths=False)
        except ValueError:
            continue
        if held == same:
            return switch(store, chat["id"]), False
    chat = {**_new_chat(), "title": title, "conversation": conversation_dict(conversation)}
    others = _without_empty(store["chats"], keep="")
    return {**store, "current": chat["id"], "chats": [chat, *others][:MAX_CHATS]}, True


def _title(raw: object) -> str:
    """A title as the list keeps it: one line, at most TITLE_CHARS ("" for anything that is not words)."""
    return " ".join(raw.split())[:TITLE_CHARS] if isinstance(raw, str) else ""


def rename(store: dict, chat_id: str, title: str) -> dict:
    """The store with the conversation `chat_id` named `title` (an empty title: named by its first message again)."""
    chat = next((c for c in store["chats"] if c["id"] == chat_id), None)
    if chat is None:
        raise InvalidRequest(MSG_CHAT_GONE)
    named = _title(title)
    renamed = {k: v for k, v in chat.items() if k != "named"} | ({"named": named} if named else {})
    renamed["title"] = named or title_of(conversation_of(chat["conversation"]))
    return {**store, "chats": [renamed if c["id"] == chat_id else c for c in store["chats"]]}


def _texts(raw: object) -> list[str]:
    """Every text of a stored conversation: the messages, every version of each reply and of each edited message
    with the turns that followed it."""
    if isinstance(raw, dict):
        return [text for key, value in raw.items() for text in ([value] if key == "text" and isinstance(value, str)
                                                                 else _texts(value))]
    return [text for item in raw for text in _texts(item)] if isinstance(raw, list) else []


def found(store: dict, query: str) -> list[tuple[str, str]]:
    """`choices` of the conversations whose title or any text holds every word of `query` (any case); all of them
    for an empty query."""
    words = query.lower().split()
    if not words:
        return choices(store)
    kept = {c["id"] for c in store["chats"]
            if all(any(word in text.lower() for text in [c["title"], *_texts(c["conversation"])]) for word in words)}
    return [(label, chat_id) for label, chat_id in choices(store) if chat_id in kept]
