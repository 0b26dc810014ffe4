"""A reply as the chat keeps it: every version Regenerate made (one of them shown), and per version the model's
words, the adapter, the figures line, what the model saw and whether max_tokens cut it.

The record travels with the Gradio message it belongs to. Gradio's Chatbot keeps only its own metadata keys
(title, id, parent_id, log, duration, status) and folds a message as a "thought" only when it has a title, so
the record is JSON in `metadata["id"]` behind REPLY_ID; the page never shows that id."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from html import unescape

from app.chat.messages import MSG_CUT
from app.chat.model_saw import saw_block
from app.core.constants import REPLY_FIGURES
from app.core.messages import MSG_STOPPED
from app.deployments.prompts import ADAPTER_TAG_RE, message_text

REPLY_ID = "reply:"
MAX_VERSIONS = 20  # Regenerate beyond this drops the oldest
FIGURES_HTML = re.compile(r'<small class="reply-figures">([^<\n]*)</small>')
SAW_HTML = re.compile(r'<details class="model-saw">.*?</details>', re.S)


@dataclass(frozen=True)
class ReplyVersion:
    """One version of a reply."""

    text: str  # the model's words: what later turns send back to it, what Continue goes on from
    adapter: str | None = None  # None: the base model
    figures: str = ""  # the plain figures line ("" for a reply that failed)
    saw: tuple[tuple[str, ...], ...] = ()  # per image, plain lines of what the encoder found
    cut_at: int | None = None  # the max-new-tokens limit that ended it, None when it ended otherwise
    stopped: bool = False  # the person pressed Stop
    note: str = ""  # a warning said under the text (an error, an adapter that seems not applied)


@dataclass(frozen=True)
class Reply:
    """The versions of one reply, oldest first; `shown` is the one the chat shows and later turns use."""

    versions: tuple[ReplyVersion, ...]
    shown: int = field(default=-1)

    def __post_init__(self) -> None:
        if not self.versions:
            raise ValueError("a reply has at least one version")
        object.__setattr__(self, "shown", self.shown % len(self.versions))

    @property
    def current(self) -> ReplyVersion:
        return self.versions[self.shown]

    def added(self, version: ReplyVersion) -> Reply:
        """With a new version (a regenerated reply), shown."""
        return Reply((*self.versions, version)[-MAX_VERSIONS:], -1)

    def stepped(self, by: int) -> Reply:
        """Showing the version `by` places later (earlier when negative), within the versions there are."""
        return replace(self, shown=max(0, min(len(self.versions) - 1, self.shown + by)))

    def with_current(self, version: ReplyVersion) -> Reply:
        """The shown version replaced (Continue extends it)."""
        versions = list(self.versions)
        versions[self.shown] = version
        return Reply(tuple(versions), self.shown)


def content_of(version: ReplyVersion) -> str:
    """The message text the chat shows: the words, "(stopped)", a note, the cut mark, what the model saw
    (folded) and the figures line."""
    words = (version.text + (" " + MSG_STOPPED if version.stopped else "")).strip()
    cut = "*" + MSG_CUT.format(limit=version.cut_at) + "*" if version.cut_at else ""
    text = "\n\n".join(part for part in (words, version.note, cut) if part)  # an error with no words is its note
    text += saw_block(version.saw)
    return text + (REPLY_FIGURES.format(figures=version.figures) if version.figures else "")


def to_dict(reply: Reply) -> dict:
    """The record as plain JSON values (the stored and exported form)."""
    return {"shown": reply.shown, "versions": [
        {"text": v.text, "adapter": v.adapter, "figures": v.figures, "saw": [list(lines) for lines in v.saw],
         "cut_at": v.cut_at, "stopped": v.stopped, "note": v.note} for v in reply.versions]}


def _version(raw: object) -> ReplyVersion:
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
        raise ValueError("a version needs its text")
    adapter, cut_at, saw = raw.get("adapter"), raw.get("cut_at"), raw.get("saw") or []
    if not isinstance(saw, list) or not all(isinstance(lines, list) for lines in saw):
        raise ValueError("saw must be lists of lines")
    return ReplyVersion(text=raw["text"], adapter=adapter if isinstance(adapter, str) and adapter else None,
                        figures=str(raw.get("figures") or ""),
                        saw=tuple(tuple(str(line) for line in lines) for lines in saw),
                        cut_at=cut_at if isinstance(cut_at, int) and cut_at > 0 else None,
                        stopped=raw.get("stopped") is True, note=str(raw.get("note") or ""))


def from_dict(raw: object) -> Reply:
    """A record `to_dict` wrote; ValueError naming what is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("versions"), list) or not raw["versions"]:
        raise ValueError("a reply needs a list of versions")
    shown = raw.get("shown", -1)
    return Reply(tuple(_version(v) for v in raw["versions"][-MAX_VERSIONS:]), shown if isinstance(shown, int) else -1)


def reply_message(reply: Reply) -> dict:
    """The Gradio message for `reply`: its shown version as text, the record in its metadata."""
    return {"role": "assistant", "content": content_of(reply.current),
            "metadata": {"id": REPLY_ID + json.dumps(to_dict(reply), ensure_ascii=False)}}


def reply_of(message: dict) -> Reply | None:
    """The record a message carries; None for a user message, a reply still streaming, or one an older app wrote."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    ident = (message.get("metadata") or {}).get("id")
    if not isinstance(ident, str) or not ident.startswith(REPLY_ID):
        return None
    try:
        return from_dict(json.loads(ident[len(REPLY_ID):]))
    except ValueError:
        return None


def _plain_html(text: str) -> str:
    text = re.sub(r"<br\s*/?>|</p>|</summary>", "\n", text)
    return unescape(re.sub(r"<[^>]+>", "", text)).strip()


def legacy_reply(message: dict) -> Reply:
    """The record of a reply an older app wrote (its adapter, figures and folded block were in its text)."""
    content = message_text(message.get("content"))
    match = ADAPTER_TAG_RE.search(content)
    figures = FIGURES_HTML.search(match.group(0)) if match else None
    saw = SAW_HTML.search(match.group(0)) if match else None
    saw_lines = tuple(line for line in _plain_html(saw.group(0)).splitlines()[1:] if line.strip()) if saw else ()
    return Reply((ReplyVersion(text=ADAPTER_TAG_RE.sub("", content),
                               adapter=match.group("adapter") if match else None,
                               figures=unescape(figures.group(1)) if figures else "",
                               saw=(saw_lines,) if saw_lines else ()),))


def any_reply(message: dict) -> Reply:
    """The record of an assistant message, whichever app wrote it."""
    return reply_of(message) or legacy_reply(message)
