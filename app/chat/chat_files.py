"""A conversation as a file: JSON that imports back (pictures, frames and pages embedded as data URLs within size
limits, a "note" for one left out) and plain Markdown. File: {"format", "version": 2, "title", "exported",
"turns"} (app.chat.conversation_json's schema); an older app's file is read by the caller's `older` reader."""

from __future__ import annotations

import base64
import json
import mimetypes
import time
from collections.abc import Callable

from app.chat.conversation_json import (
    VERSION,
    Keeper,
    OlderReader,
    conversation_dict,
    conversation_of,
    no_older,
)
from app.chat.history import TITLE_CHARS, title_of
from app.chat.messages import (
    MSG_CUT,
    MSG_IMAGE_GONE,
    MSG_IMAGE_TOO_BIG,
    MSG_IMPORT_NOT_JSON,
    MSG_IMPORT_SHAPE,
)
from app.core.constants import MAX_CONVERSATION_CHARS, MAX_CONVERSATION_MESSAGES
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.core.messages import MSG_STOPPED

FORMAT = "triton-vlm-lora-demo conversation"
MAX_EMBED_BYTES = 1024 * 1024  # a picture bigger than this is named, not embedded
MAX_EXPORT_EMBED_BYTES = 8 * 1024 * 1024  # all the pictures of one JSON export together


def export_json(conversation: Conversation, title: str | None = None,
                read_image: Callable[[str], bytes | None] | None = None) -> str:
    """The conversation as a JSON document `import_json` reads back: with `read_image` (an upload's bytes, None
    when gone) its pictures, a video's frames and a PDF's pages embedded as data URLs, each up to MAX_EMBED_BYTES
    and MAX_EXPORT_EMBED_BYTES in all (past that, a note says which were left out); without it, named only."""
    embed = Embedding(read_image) if read_image is not None else None
    return json.dumps({"format": FORMAT, "version": VERSION, "title": title or title_of(conversation),
                       "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       **conversation_dict(conversation, paths=False, embed=embed)}, ensure_ascii=False, indent=2)


class Left:
    """A picture not embedded, and why (`note`)."""

    def __init__(self, note: str):
        self.note = note


class Embedding:
    """Data URLs of an export's pictures within the size limits (one picture, and all of them together)."""

    def __init__(self, read: Callable[[str], bytes | None]):
        self._read, self._total = read, 0

    def __call__(self, path: str, name: str) -> str | Left:
        data = self._read(path)
        if data is None:
            return Left(MSG_IMAGE_GONE.format(name=name))
        if len(data) > MAX_EMBED_BYTES or self._total + len(data) > MAX_EXPORT_EMBED_BYTES:
            limit = MAX_EMBED_BYTES if len(data) > MAX_EMBED_BYTES else MAX_EXPORT_EMBED_BYTES
            return Left(MSG_IMAGE_TOO_BIG.format(name=name, size=len(data), limit=limit))
        self._total += len(data)
        return f"data:{_mime(data)};base64,{base64.b64encode(data).decode('ascii')}"


def _mime(data: bytes) -> str:
    for magic, mime in ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"), (b"GIF8", "image/gif"),
                        (b"RIFF", "image/webp"), (b"BM", "image/bmp")):
        if data.startswith(magic):
            return mime
    return "application/octet-stream"


def import_json(text: str, name: str = "the file", older: OlderReader = no_older,
                keep: Keeper | None = None) -> tuple[str, Conversation]:
    """(title, conversation) from a file `export_json` wrote, or an older app's file (read by `older`); `keep`
    stores the pictures it embeds (keep(data URL, name) -> path; ValueError for one that is no picture);
    InvalidRequest naming what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(MSG_IMPORT_NOT_JSON.format(name=name, detail=str(exc).split(":")[0])) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail=f'it has no "format": "{FORMAT}".'))
    held = data.get("turns") if "turns" in data else data.get("messages")
    if not isinstance(held, list) or not held:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail="it holds no messages."))
    if len(held) > MAX_CONVERSATION_MESSAGES:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(
            name=name, detail=f"it holds {len(held):,} messages; at most {MAX_CONVERSATION_MESSAGES:,} are kept."))
    try:
        conversation = conversation_of({"turns": held}, keep) if "turns" in data else older(held)
    except ValueError as exc:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(name=name, detail=f"{exc}.")) from None
    chars = sum(len(turn.text) for turn in conversation.turns)
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_IMPORT_SHAPE.format(
            name=name, detail=f"it is {chars:,} characters; at most {MAX_CONVERSATION_CHARS:,} are kept."))
    title = data.get("title") if isinstance(data.get("title"), str) and data["title"].strip() else title_of(conversation)
    return " ".join(title.split())[:TITLE_CHARS], conversation


def image_markdown(media: Media, read: Callable[[str], bytes | None]) -> str:
    """An image embedded as a data URL, or a note when the server no longer has it or it is too big."""
    data = read(media.path) if media.path else None
    if data is None:
        return MSG_IMAGE_GONE.format(name=media.name)
    if len(data) > MAX_EMBED_BYTES:
        return MSG_IMAGE_TOO_BIG.format(name=media.name, size=len(data), limit=MAX_EMBED_BYTES)
    mime = mimetypes.guess_type(media.name)[0] or "image/png"
    return f"![{media.name}](data:{mime};base64,{base64.b64encode(data).decode('ascii')})"


def _version_markdown(version: ReplyVersion) -> list[str]:
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


def _reply_markdown(reply: Turn) -> list[str]:
    count = len(reply.versions)
    if count == 1:
        return ["## Assistant", "", *_version_markdown(reply.versions[0])]
    lines = [f"## Assistant (version {reply.shown + 1} of {count}, the one shown)", "",
             *_version_markdown(reply.versions[reply.shown])]
    for index in range(count):
        if index != reply.shown:
            lines += [f"### Version {index + 1} of {count}", "", *_version_markdown(reply.versions[index])]
    return lines


def export_markdown(conversation: Conversation, title: str | None = None,
                    read_image: Callable[[str], bytes | None] = lambda _: None) -> str:
    """The conversation as plain Markdown: a heading per turn, images embedded (`read_image(path)`: the upload's
    bytes, None when the server no longer has it), each reply's versions with figures and what the model saw
    as plain text."""
    lines = [f"# {title or title_of(conversation)}", ""]
    for turn in conversation.turns:
        if turn.is_reply:
            lines += _reply_markdown(turn)
            continue
        count = len(turn.branches)
        lines += ["## You" + (f" (version {turn.shown + 1} of {count}, the one shown)" if count > 1 else ""), ""]
        lines += [line for media in turn.media for line in (image_markdown(media, read_image), "")]
        lines += [turn.text, ""] if turn.text else []
    return "\n".join(lines)
