"""Conversations older apps wrote (version 1), read into typed turns: the lists they kept in the browser (Gradio
Chatbot messages, a reply's record in its metadata) and the files they exported (messages with display text, a
reply's record as "reply"; files from before versions carried the adapter, figures and "What the model saw" only
in the reply's display text). The only place that reads that display form."""

from __future__ import annotations

import json
import re
from html import unescape

from app.chat.conversation_json import reply_of
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.web.messages import MSG_DAMAGED_REPLY, MSG_NOT_A_MESSAGE

REPLY_ID = "reply:"  # older apps kept a reply's record as JSON in its message's metadata["id"] behind this
# The footer older apps ended a reply's display text with: what the model saw, the figures line, the adapter tag
OLD_FOOTER = re.compile(r'(?:\n\n<details class="model-saw">(?P<saw>[^\n]*)</details>)?'
                        r'(?:\n\n<small class="reply-figures">(?P<figures>[^<\n]*)</small>)?'
                        r'(?:\n\n\*adapter: (?P<adapter>[^*\n]+)\*)?$')
PICTURE_LINE = re.compile(r"^\[image (?P<name>[^\]\n]+?)(?:: not kept)?\]$")  # a picture an export named


def content_text(content: object) -> str:
    """Text of a Gradio message content (a string or a list of typed blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text", "")) if content.get("type", "text") == "text" else ""
    if isinstance(content, list | tuple):
        return "".join(content_text(block) for block in content)
    return ""


def file_path(content: object) -> str | None:
    """Path of a Gradio file message content (either of the shapes Gradio 6 uses), else None."""
    if isinstance(content, list | tuple):
        return next((p for p in map(file_path, content) if p), None)
    if isinstance(content, dict):
        if content.get("type") == "file":
            return file_path(content.get("file"))
        if content.get("type", "file") != "text" and isinstance(content.get("path"), str):
            return content["path"]
    return None


def _plain_html(text: str) -> str:
    text = re.sub(r"<br\s*/?>|</p>|</summary>", "\n", text)
    return unescape(re.sub(r"<[^>]+>", "", text)).strip()


def footer_reply(content: str) -> Turn:
    """A reply an app before versions wrote: its adapter, figures and folded block were in its text."""
    match = OLD_FOOTER.search(content)
    saw = _plain_html(match.group("saw")).splitlines()[1:] if match.group("saw") else []
    saw_lines = tuple(line for line in saw if line.strip())
    return Turn.reply(ReplyVersion(text=content[:match.start()], adapter=match.group("adapter"),
                                   figures=unescape(match.group("figures") or ""),
                                   saw=(saw_lines,) if saw_lines else ()))


def _record(message: dict) -> object:
    """A reply's record: "reply" in a file, behind REPLY_ID in the metadata of a kept message (None: none)."""
    if "reply" in message:
        return message["reply"]
    ident = (message.get("metadata") or {}).get("id")
    if isinstance(ident, str) and ident.startswith(REPLY_ID):
        try:
            return json.loads(ident[len(REPLY_ID):])
        except ValueError:
            return None
    return None


def _reply(message: dict, number: int, strict: bool) -> Turn | None:
    record = _record(message)
    if record is not None:
        try:
            return reply_of(record)
        except ValueError as exc:
            if strict:
                raise ValueError(MSG_DAMAGED_REPLY.format(number=number, detail=exc)) from None
    text = content_text(message.get("content"))
    return footer_reply(text) if text else None


def conversation_of_messages(messages: object, strict: bool = False) -> Conversation:
    """Typed turns from an older app's messages: a person's pictures (file messages, or lines naming them) join the
    text after them; `strict` (a file): ValueError naming the first message that is not one, else such a message
    is dropped (a kept list, whatever the browser held)."""
    turns: list[Turn] = []
    media: list[Media] = []
    for number, message in enumerate(messages if isinstance(messages, list) else [], start=1):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role not in ("user", "assistant") or (strict and not isinstance(content, str)):
            if strict:
                raise ValueError(MSG_NOT_A_MESSAGE.format(number=number))
            continue
        if role == "assistant":
            reply = _reply(message, number, strict)
            if reply is not None:
                turns += [Turn.user("", tuple(media))] if media else []
                turns.append(reply)
                media = []
            continue
        path = file_path(content)
        text = content_text(content)
        named = PICTURE_LINE.match(text.strip())
        if path or named:
            media.append(Media.of(path) if path else Media(name=named.group("name")))
        elif text:
            turns.append(Turn.user(text, tuple(media)))
            media = []
    if media:
        turns.append(Turn.user("", tuple(media)))
    return Conversation(tuple(turns))


def conversation_of_file(messages: object) -> Conversation:
    """The conversation of an older app's exported file (ValueError naming what is wrong)."""
    return conversation_of_messages(messages, strict=True)
