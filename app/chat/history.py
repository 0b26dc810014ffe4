"""Conversations kept in the person's browser: the stored list (switch, new, delete), and export to JSON and
Markdown and import back. Pure functions over the stored value; the server keeps none of it (an imported file's
pictures are stored where uploads are, by the caller's `keep`).

Both the stored value and the exported file hold conversations in one versioned JSON schema of the typed
turns (app.core.conversation), VERSION 2:

    {"turns": [{"role": "user", "text": ..., "media": [{"kind": "image", "name": ..., "path": ...}]},
               {"role": "assistant", "shown": 0, "versions": [{"text", "adapter", "sampling", "figures", "saw",
                                                               "context", "cut_at", "stopped", "note"}]}]}

Stored value: {"version": 2, "current": id, "chats": [{"id", "title", "updated", "conversation"}]}, newest
first; a picture keeps its upload's path while the server still has the file. File: {"format", "version": 2,
"title", "exported", "turns"}; pictures, frames and pages embedded as data URLs ("data", "frames_data") within
size limits, a "note" for one left out. What older apps wrote (version 1: chat messages
with display text) is read by the caller's `older` reader (app.web.legacy_chats), the only place that reads
that display form."""

from __future__ import annotations

import base64
import json
import mimetypes
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, fields, replace

from app.chat.messages import (
    MSG_CUT,
    MSG_IMAGE_GONE,
    MSG_IMAGE_TOO_BIG,
    MSG_IMPORT_NOT_JSON,
    MSG_IMPORT_SHAPE,
)
from app.chat.reply_outputs import MARKDOWN_FAMILIES, ReplyOutputs, outputs_kind, parse_reply
from app.core.constants import MAX_CONVERSATION_CHARS, MAX_CONVERSATION_MESSAGES
from app.core.conversation import ASSISTANT, ROLES, USER, Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.core.messages import MSG_STOPPED
from app.core.sampling import SamplingParams

FORMAT = "triton-vlm-lora-demo conversation"
VERSION = 2
MAX_CHATS = 30  # the oldest go first
TITLE_CHARS = 48
LIST_TITLE_CHARS = 30  # with " · 12 turns" this fits the conversation list's box at 400 px (a browser test checks)
NEW_TITLE = "New chat"
MAX_EMBED_BYTES = 1024 * 1024  # an image bigger than this is named, not embedded, in a Markdown export

OlderReader = Callable[[object], Conversation]  # version 1 messages -> Conversation (ValueError when damaged)
Embedder = Callable[[str, str], object]  # (upload path, name) -> a data URL, or Left (why it is not embedded)
Keeper = Callable[[str, str], str]  # (data URL, name) -> the path it was stored at (ValueError: not a picture)
MAX_EXPORT_EMBED_BYTES = 8 * 1024 * 1024  # all the pictures of one JSON export together


def _no_older(_messages: object) -> Conversation:
    raise ValueError("it was written by an older app")


# ---- the schema ------------------------------------------------------------------------------------------------
def _version_dict(version: ReplyVersion) -> dict:
    return {"text": version.text, "adapter": version.adapter,
            "sampling": asdict(version.sampling) if version.sampling else None, "figures": version.figures,
            "saw": [list(lines) for lines in version.saw], "context": list(version.context),
            "cut_at": version.cut_at, "stopped": version.stopped, "note": version.note,
            **({"parsed": outputs_kind(version.outputs)} if isinstance(version.outputs, ReplyOutputs) else {})}


def _media_dict(media: Media, paths: bool, embed: Embedder | None = None) -> dict:
    """A file of a message as JSON values: its path (`paths`), and with `embed` its picture or frames as data URLs
    (a note instead when over the size limit or gone)."""
    out = {"kind": media.kind, "name": media.name, **({"path": media.path} if paths and media.path else {})}
    if media.frames and paths and all(isinstance(f, str) for f in media.frames):
        out.update(frames=list(media.frames), labels=list(media.labels), detail=media.detail, as_video=media.as_video)
    if embed is not None:
        if media.frames and all(isinstance(f, str) for f in media.frames):
            urls = [embed(frame, f"{media.name} {label}") for frame, label in zip(
                media.frames, media.labels or [str(n) for n in range(1, len(media.frames) + 1)], strict=False)]
            if all(isinstance(url, str) for url in urls):
                out.update(frames_data=urls, labels=list(media.labels), detail=media.detail)
            else:
                out["note"] = next(url.note for url in urls if not isinstance(url, str))
        elif media.path:
            url = embed(media.path, media.name)
            out.update({"data": url} if isinstance(url, str) else {"note": url.note})
    return out


def turn_dict(turn: Turn, paths: bool = True, embed: Embedder | None = None) -> dict:
    """A turn as plain JSON values (`paths`: with each picture's upload path; `embed`: the pictures themselves)."""
    if turn.is_reply:
        return {"role": ASSISTANT, "shown": turn.shown, "versions": [_version_dict(v) for v in turn.versions]}
    media = [_media_dict(m, paths, embed) for m in turn.media]
    return {"role": USER, "text": turn.text, "media": media}


def conversation_dict(conversation: Conversation, paths: bool = True, embed: Embedder | None = None) -> dict:
    return {"turns": [turn_dict(turn, paths, embed) for turn in conversation.turns]}


def _sampling(raw: object) -> SamplingParams | None:
    if not isinstance(raw, dict):
        return None
    names = {f.name for f in fields(SamplingParams)}
    try:
        return SamplingParams(**{k: v for k, v in raw.items() if k in names})
    except (InvalidRequest, TypeError):
        return None


def version_of(raw: object) -> ReplyVersion:
    """A reply version from its JSON values; ValueError naming what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
        raise ValueError("a version needs its text")
    adapter, cut_at, saw = raw.get("adapter"), raw.get("cut_at"), raw.get("saw") or []
    context = raw.get("context") or []
    if not isinstance(saw, list) or not all(isinstance(lines, list) for lines in saw):
        raise ValueError("saw must be lists of lines")
    if not isinstance(context, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in context):
        raise ValueError("context must be a list of turn numbers")
    return ReplyVersion(text=raw["text"], adapter=adapter if isinstance(adapter, str) and adapter else None,
                        sampling=_sampling(raw.get("sampling")), figures=str(raw.get("figures") or ""),
                        saw=tuple(tuple(str(line) for line in lines) for lines in saw), context=tuple(context),
                        cut_at=cut_at if isinstance(cut_at, int) and cut_at > 0 else None,
                        stopped=raw.get("stopped") is True, note=str(raw.get("note") or ""))


def reply_of(raw: object) -> Turn:
    """A reply from {"shown", "versions"}; ValueError naming what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("versions"), list) or not raw["versions"]:
        raise ValueError("a reply needs a list of versions")
    shown = raw.get("shown", -1)
    versions = tuple(version_of(v) for v in raw["versions"])
    return Turn(ASSISTANT, versions=versions, shown=shown if isinstance(shown, int) and not isinstance(shown, bool)
                else -1)


def _media_of(raw: object, keep: Keeper | None = None) -> Media:
    """A message's file from its JSON values; with `keep`, pictures and frames embedded as data URLs are stored
    (keep(data URL, name) -> path) and shown again."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name", ""), str):
        raise ValueError("a picture is {kind, name}")
    path, frames, labels = raw.get("path"), raw.get("frames") or [], raw.get("labels") or []
    if keep is not None and (raw.get("data") or raw.get("frames_data")):
        path, frames = _kept_data(raw, keep)  # else a path stays: shown only if it is an upload this server holds
    if not isinstance(frames, list) or not all(isinstance(f, str) for f in frames) or not isinstance(labels, list):
        raise ValueError("a video's or PDF's frames are a list of paths")
    return Media(name=raw.get("name", ""), path=path if isinstance(path, str) and path else None,
                 kind=str(raw.get("kind") or "image"), frames=tuple(frames), labels=tuple(map(str, labels)),
                 detail=str(raw.get("detail") or ""), as_video=raw.get("as_video") is True)


def _kept_data(raw: dict, keep: Keeper) -> tuple[str | None, list]:
    """(path, frames) of an imported file: its embedded picture or frames stored by `keep`."""
    name = raw.get("name") or "picture"
    data, frames = raw.get("data"), raw.get("frames_data")
    if isinstance(frames, list) and frames:
        if not all(isinstance(url, str) for url in frames):
            raise ValueError("frames_data must be data URLs")
        return None, [keep(url, f"{name}-{number}") for number, url in enumerate(frames, 1)]
    return (keep(data, name) if isinstance(data, str) else None), []


def with_outputs(turns: list[Turn], raws: list[dict]) -> list[Turn]:
    """Replies whose saved version was parsed (a table, boxes, a markdown page) parsed again from their text, the
    boxes on the picture of the message they answer."""
    out: list[Turn] = []
    picture = None
    for turn, raw in zip(turns, raws, strict=True):
        if not turn.is_reply:
            picture = turn.images[-1] if turn.images else picture
            out.append(turn)
            continue
        kinds = [v.get("parsed") if isinstance(v, dict) else None for v in raw["versions"]][-len(turn.versions):]
        versions = tuple(replace(v, outputs=parse_reply(v.text, MARKDOWN_FAMILIES[0] if kind == "markdown" else None,
                                                        picture)) if kind else v
                         for v, kind in zip(turn.versions, kinds, strict=True))
        out.append(Turn(ASSISTANT, versions=versions, shown=turn.shown))
    return out


def turn_of(raw: object, keep: Keeper | None = None) -> Turn:
    """A turn `turn_dict` wrote (`keep`: stores its embedded pictures); ValueError naming what is wrong."""
    if not isinstance(raw, dict) or raw.get("role") not in ROLES:
        raise ValueError('a turn has "role": "user" or "assistant"')
    if raw["role"] == ASSISTANT:
        return reply_of(raw)
    media = raw.get("media") or []
    if not isinstance(raw.get("text"), str) or not isinstance(media, list):
        raise ValueError("a message has its text and a list of media")
    return Turn.user(raw["text"], tuple(_media_of(m, keep) for m in media))


def conversation_of(raw: object, keep: Keeper | None = None) -> Conversation:
    """A conversation `conversation_dict` wrote (`keep`: stores its embedded pictures); ValueError naming the first
    damaged turn."""
    turns = raw.get("turns") if isinstance(raw, dict) else None
    if not isinstance(turns, list):
        raise ValueError("it holds no list of turns")
    out = []
    kept = turns[-MAX_CONVERSATION_MESSAGES:]
    for number, turn in enumerate(kept, start=1):
        try:
            out.append(turn_of(turn, keep))
        except ValueError as exc:
            raise ValueError(f"turn {number} is damaged ({exc})") from None
    return Conversation(tuple(with_outputs(out, kept)))


# ---- the list kept in the browser --------------------------------------------------------------------------------
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


def kept_pictures(conversation: Conversation, image_kept: Callable[[str], bool]) -> Conversation:
    """The conversation with the path of every picture the server no longer has dropped (the name stays)."""
    def media(turn: Turn) -> Turn:
        if not any(m.path and not image_kept(m.path) for m in turn.media):
            return turn
        return Turn.user(turn.text, tuple(m if not m.path or image_kept(m.path) else Media(m.name, kind=m.kind)
                                          for m in turn.media))

    def frames(turn: Turn) -> Turn:  # a video or PDF whose frames are gone is named only
        if not any(m.frames and not all(image_kept(f) for f in m.frames if isinstance(f, str)) for m in turn.media):
            return turn
        return Turn.user(turn.text, tuple(m if not m.frames or all(image_kept(f) for f in m.frames if isinstance(
            f, str)) else Media(m.name, kind=m.kind) for m in turn.media))
    return Conversation(tuple(frames(media(turn)) if not turn.is_reply else turn
                              for turn in conversation.turns[-MAX_CONVERSATION_MESSAGES:]))


def _stored_conversation(chat: dict, image_kept: Callable[[str], bool], older: OlderReader) -> Conversation:
    try:
        if "conversation" in chat:
            conversation = conversation_of(chat["conversation"])
        else:
            conversation = older(chat.get("messages"))
    except ValueError:
        conversation = Conversation()
    return kept_pictures(conversation, image_kept)


def normalise(stored: object, image_kept: Callable[[str], bool], older: OlderReader = _no_older) -> dict:
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
        chats.append({"id": chat["id"][:40], "title": title_of(conversation),
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
    chat = {**chat, "conversation": saved, "title": title_of(conversation), "updated": time.time()}
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
        raise InvalidRequest("That conversation is no longer in this browser.")
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


# ---- files -------------------------------------------------------------------------------------------------------
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


def import_json(text: str, name: str = "the file", older: OlderReader = _no_older,
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
        lines += ["## You", ""]
        lines += [line for media in turn.media for line in (image_markdown(media, read_image), "")]
        lines += [turn.text, ""] if turn.text else []
    return "\n".join(lines)
