"""The conversation's saved JSON form, VERSION 2, one schema of the typed turns (app.core.conversation) for both
the list kept in the browser (app.chat.history) and the exported file (app.chat.chat_files):

    {"turns": [{"role": "user", "text": ..., "media": [{"kind": "image", "name": ..., "path": ...}]},
               {"role": "user", "text", "media", "shown": 1, "branches": [{"text", "media", "later": [turns]}]},
               {"role": "assistant", "shown": 0, "versions": [{"text", "adapter", "sampling", "figures", "saw",
                                                               "context", "cut_at", "stopped", "note"}]}]}

A picture keeps its upload's path while the server still has the file (`kept_pictures`); an exported file embeds
pictures, frames and pages as data URLs ("data", "frames_data", through the caller's `embed`), and an import
stores them back (the caller's `keep`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, fields, replace

from app.chat.reply_outputs import MARKDOWN_FAMILIES, ReplyOutputs, outputs_kind, parse_reply
from app.core.constants import MAX_CONVERSATION_MESSAGES
from app.core.conversation import ASSISTANT, ROLES, USER, Branch, Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams

VERSION = 2
OlderReader = Callable[[object], Conversation]  # version 1 messages -> Conversation (ValueError when damaged)
Embedder = Callable[[str, str], object]  # (upload path, name) -> a data URL, or Left (why it is not embedded)
Keeper = Callable[[str, str], str]  # (data URL, name) -> the path it was stored at (ValueError: not a picture)


def no_older(_messages: object) -> Conversation:
    """The `older` reader of a caller that reads none: what an older app wrote is refused."""
    raise ValueError("it was written by an older app")


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
    """A turn as plain JSON values (`paths`: with each picture's upload path; `embed`: the pictures themselves); an
    edited message with its versions ("branches", each with the turns that followed it) and the one shown."""
    if turn.is_reply:
        return {"role": ASSISTANT, "shown": turn.shown, "versions": [_version_dict(v) for v in turn.versions]}
    media = [_media_dict(m, paths, embed) for m in turn.media]
    if not turn.branches:
        return {"role": USER, "text": turn.text, "media": media}
    return {"role": USER, "text": turn.text, "media": media, "shown": turn.shown,
            "branches": [{"text": b.text, "media": [_media_dict(m, paths, embed) for m in b.media],
                          "later": [turn_dict(t, paths, embed) for t in b.later]} for b in turn.branches]}


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


def with_outputs(turns: list[Turn], raws: list[dict], picture: str | bytes | None = None) -> list[Turn]:
    """Replies whose saved version was parsed (a table, boxes, a markdown page) parsed again from their text, the
    boxes on the picture of the message they answer (`picture`: the one before the first turn)."""
    out: list[Turn] = []
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
    if "branches" in raw:
        return _branched_of(raw, keep)
    media = raw.get("media") or []
    if not isinstance(raw.get("text"), str) or not isinstance(media, list):
        raise ValueError("a message has its text and a list of media")
    return Turn.user(raw["text"], tuple(_media_of(m, keep) for m in media))


def _branched_of(raw: dict, keep: Keeper | None) -> Turn:
    """An edited message: its versions, each with the turns that followed it."""
    branches, shown = raw["branches"], raw.get("shown", -1)
    if not isinstance(branches, list) or not branches or not all(isinstance(b, dict) for b in branches):
        raise ValueError("an edited message has a list of versions")
    out = []
    for branch in branches:
        text, media, later = branch.get("text"), branch.get("media") or [], branch.get("later") or []
        if not isinstance(text, str) or not isinstance(media, list) or not isinstance(later, list):
            raise ValueError("a message's version has its text, media and the turns after it")
        kept = tuple(_media_of(m, keep) for m in media)
        pictures = [p for m in kept for p in m.pictures]
        out.append(Branch(text, kept, tuple(with_outputs([turn_of(t, keep) for t in later], later,
                                                         pictures[-1] if pictures else None))))
    return Turn(USER, branches=tuple(out), shown=shown if isinstance(shown, int) and not isinstance(shown, bool) else -1)


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



def kept_pictures(conversation: Conversation, image_kept: Callable[[str], bool]) -> Conversation:
    """The conversation with every picture the server no longer has named only (its path, or a video's or PDF's
    frames, gone), in every version of an edited message too."""
    def kept(media: Media) -> Media:
        gone = (media.path and not image_kept(media.path)) or (
            media.frames and not all(image_kept(f) for f in media.frames if isinstance(f, str)))
        return Media(media.name, kind=media.kind) if gone else media

    def turn_kept(turn: Turn) -> Turn:
        if turn.is_reply:
            return turn
        if turn.branches:
            return Turn(USER, shown=turn.shown, branches=tuple(
                Branch(b.text, tuple(map(kept, b.media)), tuple(map(turn_kept, b.later))) for b in turn.branches))
        media = tuple(map(kept, turn.media))
        return turn if media == turn.media else Turn.user(turn.text, media)
    return Conversation(tuple(map(turn_kept, conversation.turns[-MAX_CONVERSATION_MESSAGES:])))
