"""Conversations kept in the person's browser: the stored list (switch, new, delete), and export to
JSON and Markdown and import back. Pure functions over the stored value; the server keeps none of it.

Stored value: {"version": 1, "current": id, "chats": [{"id", "title", "updated", "messages"}]}, newest
first. Messages are {"role", "content"} with text content, or a user image {"path": ...} that is shown
again only while the server still has the uploaded file."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from app.chat.messages import MSG_IMAGE_NOT_KEPT, MSG_IMPORT_NOT_JSON, MSG_IMPORT_SHAPE
from app.core.constants import MAX_CONVERSATION_CHARS, MAX_CONVERSATION_MESSAGES
from app.core.errors import InvalidRequest
from app.deployments.prompts import file_path, message_text

FORMAT = "triton-vlm-lora-demo conversation"
VERSION = 1
MAX_CHATS = 30  # the oldest go first
TITLE_CHARS = 48
NEW_TITLE = "New chat"
ROLES = ("user", "assistant")


def empty_store() -> dict:
    chat = _new_chat()
    return {"version": VERSION, "current": chat["id"], "chats": [chat]}


def _new_chat() -> dict:
    return {"id": uuid.uuid4().hex[:12], "title": NEW_TITLE, "updated": time.time(), "messages": []}


def title_of(messages: list[dict]) -> str:
    """The first user text, shortened; "New chat" for a conversation without one."""
    text = next((message_text(m.get("content")) for m in messages
                 if m.get("role") == "user" and message_text(m.get("content")).strip()), "")
    text = " ".join(text.split())
    if not text:
        return NEW_TITLE
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1].rstrip() + "…"


def plain_messages(messages: list[dict], image_kept: Callable[[str], bool]) -> list[dict]:
    """Messages in the stored form: text content as one string; images as {"path"} when `image_kept(path)`,
    else a short text saying the image is gone. Anything else is dropped."""
    out = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            continue
        path = file_path(message.get("content"))
        if path is not None and message["role"] == "user":
            if image_kept(path):
                out.append({"role": "user", "content": {"path": path}})
            else:
                out.append({"role": "user", "content": MSG_IMAGE_NOT_KEPT.format(name=Path(path).name)})
            continue
        text = message_text(message.get("content"))
        if text:
            out.append({"role": message["role"], "content": text})
    return out[-MAX_CONVERSATION_MESSAGES:]


def normalise(stored: object, image_kept: Callable[[str], bool]) -> dict:
    """The stored value as this app writes it, whatever the browser held (another version, edited by hand)."""
    if not isinstance(stored, dict) or not isinstance(stored.get("chats"), list):
        return empty_store()
    chats = []
    for chat in stored["chats"][:MAX_CHATS]:
        if not isinstance(chat, dict) or not isinstance(chat.get("id"), str) or not chat["id"]:
            continue
        messages = plain_messages(chat.get("messages"), image_kept)
        updated = chat.get("updated")
        chats.append({"id": chat["id"][:40], "title": title_of(messages),
                      "updated": float(updated) if isinstance(updated, int | float) else 0.0,
                      "messages": messages})
    if not chats:
        return empty_store()
    ids = [c["id"] for c in chats]
    current = stored.get("current") if stored.get("current") in ids else ids[0]
    return {"version": VERSION, "current": current, "chats": chats}


def current_messages(store: dict) -> list[dict]:
    return next((c["messages"] for c in store["chats"] if c["id"] == store["current"]), [])


def save_current(store: dict, messages: list[dict], image_kept: Callable[[str], bool]) -> dict:
    """The store with the current conversation replaced by `messages` (moved to the top of the list)."""
    messages = plain_messages(messages, image_kept)
    chat = next((c for c in store["chats"] if c["id"] == store["current"]), None) or _new_chat()
    if chat["messages"] == messages and chat in store["chats"]:
        return store
    chat = {**chat, "messages": messages, "title": title_of(messages), "updated": time.time()}
    others = [c for c in store["chats"] if c["id"] != chat["id"]]
    return {**store, "current": chat["id"], "chats": [chat, *others][:MAX_CHATS]}


def new_chat(store: dict) -> dict:
    """The store with an empty conversation as the current one (the current one if it is empty already)."""
    if not current_messages(store) and any(c["id"] == store["current"] for c in store["chats"]):
        return store
    chat = _new_chat()
    return {**store, "current": chat["id"], "chats": [chat, *store["chats"]][:MAX_CHATS]}


def switch(store: dict, chat_id: str) -> dict:
    if not any(c["id"] == chat_id for c in store["chats"]):
        raise InvalidRequest("That conversation is no longer in this browser.")
    return {**store, "current": chat_id}


def delete_current(store: dict) -> dict:
    """The store without the current conversation; the next one (or a new empty one) becomes current."""
    others = [c for c in store["chats"] if c["id"] != store["current"]]
    if not others:
        return empty_store()
    return {**store, "current": others[0]["id"], "chats": others}


def choices(store: dict) -> list[tuple[str, str]]:
    """(label, id) per conversation, newest first, for a dropdown."""
    def label(chat: dict) -> str:
        count = len(chat["messages"])
        return f"{chat['title']} · {count} message{'' if count == 1 else 's'}" if count else chat["title"]
    return [(label(c), c["id"]) for c in store["chats"]]


def add_imported(store: dict, title: str, messages: list[dict]) -> dict:
    chat = {**_new_chat(), "title": title, "messages": messages}
    return {**store, "current": chat["id"], "chats": [chat, *store["chats"]][:MAX_CHATS]}


def _export_messages(messages: list[dict]) -> list[dict]:
    """Messages for a file: images become a text line naming them (the file itself stays in the browser)."""
    out = []
    for message in plain_messages(messages, image_kept=lambda _: True):
        content = message["content"]
        if isinstance(content, dict):
            content = f"[image {Path(content['path']).name}]"
        out.append({"role": message["role"], "content": content})
    return out


def export_json(messages: list[dict], title: str | None = None) -> str:
    """The conversation as a JSON document `import_json` reads back."""
    exported = _export_messages(messages)
    return json.dumps({"format": FORMAT, "version": VERSION, "title": title or title_of(messages),
                       "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "messages": exported},
                      ensure_ascii=False, indent=2)


def export_markdown(messages: list[dict], title: str | None = None) -> str:
    """The conversation as Markdown: a heading per turn, the text as written."""
    exported = _export_messages(messages)
    lines = [f"# {title or title_of(messages)}", ""]
    for message in exported:
        lines += [f"## {'You' if message['role'] == 'user' else 'Assistant'}", "", message["content"], ""]
    return "\n".join(lines)


def import_json(text: str, name: str = "the file") -> tuple[str, list[dict]]:
    """(title, messages) from a file `export_json` wrote; InvalidRequest naming what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(MSG_IMPORT_NOT_JSON.format(name=name, detail=str(exc).split(":")[0])) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail=f'it has no "format": "{FORMAT}".'))
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail="it holds no messages."))
    if len(raw) > MAX_CONVERSATION_MESSAGES:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(
            name=name, detail=f"it holds {len(raw):,} messages; at most {MAX_CONVERSATION_MESSAGES:,} are kept."))
    messages = []
    for number, message in enumerate(raw, start=1):
        if not isinstance(message, dict) or message.get("role") not in ROLES or not isinstance(message.get("content"), str):
            raise InvalidRequest(MSG_IMPORT_SHAPE.format(
                name=name, detail=f'message {number} is not {{"role": "user" or "assistant", "content": text}}.'))
        messages.append({"role": message["role"], "content": message["content"]})
    chars = sum(len(m["content"]) for m in messages)
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(
            name=name, detail=f"it is {chars:,} characters; at most {MAX_CONVERSATION_CHARS:,} are kept."))
    title = data.get("title") if isinstance(data.get("title"), str) and data["title"].strip() else title_of(messages)
    return " ".join(title.split())[:TITLE_CHARS], messages
