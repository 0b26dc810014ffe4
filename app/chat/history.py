"""Conversations kept in the person's browser: the stored list (switch, new, delete), and export to
JSON and Markdown and import back. Pure functions over the stored value; the server keeps none of it.

Stored value: {"version": 1, "current": id, "chats": [{"id", "title", "updated", "messages"}]}, newest
first. Messages are {"role", "content"} with text content, or a user image {"path": ...} that is shown
again only while the server still has the uploaded file; a reply also carries its record (versions,
app.chat.versions) in its metadata. Exported replies hold that record as "reply"; files without it (written
before versions) import as single-version replies."""

from __future__ import annotations

import base64
import json
import mimetypes
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from app.chat.messages import (
    MSG_CUT,
    MSG_IMAGE_GONE,
    MSG_IMAGE_NOT_KEPT,
    MSG_IMAGE_TOO_BIG,
    MSG_IMPORT_NOT_JSON,
    MSG_IMPORT_SHAPE,
)
from app.chat.versions import Reply, any_reply, from_dict, reply_message, reply_of, to_dict
from app.core.constants import MAX_CONVERSATION_CHARS, MAX_CONVERSATION_MESSAGES
from app.core.errors import InvalidRequest
from app.core.messages import MSG_STOPPED
from app.deployments.prompts import file_path, message_text

FORMAT = "triton-vlm-lora-demo conversation"
VERSION = 1
MAX_CHATS = 30  # the oldest go first
TITLE_CHARS = 48
LIST_TITLE_CHARS = 30  # with " · 12 turns" this fits the conversation list's box at 400 px (a browser test checks)
NEW_TITLE = "New chat"
ROLES = ("user", "assistant")
MAX_EMBED_BYTES = 1024 * 1024  # an image bigger than this is named, not embedded, in a Markdown export


def turns_count(messages: list[dict]) -> int:
    """The person's messages with text (a message's images are part of it, not messages of their own)."""
    return sum(1 for m in messages if m.get("role") == "user" and message_text(m.get("content")).strip())


def turns_text(count: int) -> str:
    return f"{count} turn{'' if count == 1 else 's'}"


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
        reply = reply_of(message)
        if reply is not None:
            out.append(reply_message(reply))
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
    """(label, id) per conversation, newest first, for a dropdown: the title shortened so that the count of turns
    stays in view on a phone."""
    def label(chat: dict) -> str:
        count = turns_count(chat["messages"])
        title = chat["title"]
        if len(title) > LIST_TITLE_CHARS:
            title = title[:LIST_TITLE_CHARS - 1].rstrip() + "…"
        return f"{title} · {turns_text(count)}" if count else title
    return [(label(c), c["id"]) for c in store["chats"]]


def add_imported(store: dict, title: str, messages: list[dict]) -> dict:
    chat = {**_new_chat(), "title": title, "messages": messages}
    return {**store, "current": chat["id"], "chats": [chat, *store["chats"]][:MAX_CHATS]}


def _export_messages(messages: list[dict]) -> list[dict]:
    """Messages for a file: images become a text line naming them (the file itself stays in the browser); a
    reply keeps its shown text as "content" (what files before versions held) and its record as "reply"."""
    out = []
    for message in plain_messages(messages, image_kept=lambda _: True):
        content = message["content"]
        if isinstance(content, dict):
            content = f"[image {Path(content['path']).name}]"
        item = {"role": message["role"], "content": content}
        reply = reply_of(message)
        if reply is not None:
            item["reply"] = to_dict(reply)
        out.append(item)
    return out


def export_json(messages: list[dict], title: str | None = None) -> str:
    """The conversation as a JSON document `import_json` reads back."""
    exported = _export_messages(messages)
    return json.dumps({"format": FORMAT, "version": VERSION, "title": title or title_of(messages),
                       "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "messages": exported},
                      ensure_ascii=False, indent=2)


def image_markdown(path: str, read: Callable[[str], bytes | None]) -> str:
    """An image embedded as a data URL, or a note when the server no longer has it or it is too big."""
    name = Path(path).name
    data = read(path)
    if data is None:
        return MSG_IMAGE_GONE.format(name=name)
    if len(data) > MAX_EMBED_BYTES:
        return MSG_IMAGE_TOO_BIG.format(name=name, size=len(data), limit=MAX_EMBED_BYTES)
    mime = mimetypes.guess_type(name)[0] or "image/png"
    return f"![{name}](data:{mime};base64,{base64.b64encode(data).decode('ascii')})"


def _version_markdown(reply: Reply, index: int) -> list[str]:
    version = reply.versions[index]
    lines = [version.text + (" " + MSG_STOPPED if version.stopped else ""), ""]
    if version.note:
        lines += [version.note, ""]
    if version.cut_at:
        lines += ["*" + MSG_CUT.format(limit=version.cut_at) + "*", ""]
    for number, found in enumerate(version.saw, 1):
        heading = f"What the model saw (image {number}):" if len(version.saw) > 1 else "What the model saw:"
        lines += [heading, "", *[f"- {line}" for line in found], ""]
    if version.figures:
        lines += [f"*{version.figures}*", ""]
    return lines


def _reply_markdown(reply: Reply) -> list[str]:
    count = len(reply.versions)
    if count == 1:
        return ["## Assistant", "", *_version_markdown(reply, 0)]
    lines = [f"## Assistant (version {reply.shown + 1} of {count}, the one shown)", "",
             *_version_markdown(reply, reply.shown)]
    for index in range(count):
        if index != reply.shown:
            lines += [f"### Version {index + 1} of {count}", "", *_version_markdown(reply, index)]
    return lines


def export_markdown(messages: list[dict], title: str | None = None,
                    read_image: Callable[[str], bytes | None] = lambda _: None) -> str:
    """The conversation as plain Markdown: a heading per turn, images embedded (`read_image(path)`: the upload's
    bytes, None when the server no longer has it), each reply's versions with figures and what the model saw
    as plain text."""
    lines, role = [f"# {title or title_of(messages)}", ""], None
    for message in plain_messages(messages, image_kept=lambda _: True):
        if message["role"] == "assistant":
            lines += _reply_markdown(any_reply(message))
        else:
            content = message["content"]
            lines += [] if role == "user" else ["## You", ""]  # a turn's images and text under one heading
            lines += [image_markdown(content["path"], read_image) if isinstance(content, dict) else content, ""]
        role = message["role"]
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
        messages.append(_imported(message, number, name))
    chars = sum(len(m["content"]) for m in messages)
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(
            name=name, detail=f"it is {chars:,} characters; at most {MAX_CONVERSATION_CHARS:,} are kept."))
    title = data.get("title") if isinstance(data.get("title"), str) and data["title"].strip() else title_of(messages)
    return " ".join(title.split())[:TITLE_CHARS], messages


def _imported(message: dict, number: int, name: str) -> dict:
    """One message of an imported file; a reply with its versions when the file holds them."""
    if message["role"] != "assistant" or "reply" not in message:
        return {"role": message["role"], "content": message["content"]}
    try:
        return reply_message(from_dict(message["reply"]))
    except ValueError as exc:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail=f"reply {number} is damaged ({exc}).")) from None
