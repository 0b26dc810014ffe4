"""The conversation as the chat shows it: Gradio Chatbot messages made from the typed turns (a person's pictures
as file messages before the text; a reply's shown version with its cut mark, note, "What the model saw" folded
and the figures line), the reply being written, and the messages waiting to be sent. Display only: the chat's
state is the typed Conversation, and nothing reads these messages back."""

from __future__ import annotations

from html import escape

from app.chat.messages import MSG_CUT, MSG_IMAGE_NOT_KEPT
from app.chat.outbox import Queued
from app.core.conversation import Conversation, ReplyVersion, Turn
from app.core.messages import MSG_STOPPED
from app.web.messages import MSG_SENT_ALL, MSG_SENT_SOME

PENDING_PREFIX = "*waiting to be sent:* "  # marks a queued message in the shown conversation
REPLY_FIGURES = '\n\n<small class="reply-figures">{figures}</small>'  # a finished reply's figures line
MODEL_SAW = '\n\n<details class="model-saw"><summary>What the model saw</summary>{items}</details>'  # one line


def _numbers(values: list[int]) -> str:
    """1, 2, 3, 5 -> '1–3, 5'."""
    runs: list[list[int]] = []
    for value in values:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ", ".join(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def context_line(version: ReplyVersion, before: tuple[Turn, ...]) -> str:
    """Which of the person's messages before a reply (`before`: the turns before it) the model was sent: said when
    the reply saw pictures or a picture started what it saw ("" when the version does not record it)."""
    if not version.context:
        return ""
    people = [i for i, turn in enumerate(before) if not turn.is_reply]
    sent = [number for number, i in enumerate(people, 1) if i in version.context]
    left_out_before = bool(people) and min(version.context) > people[0]
    if not sent or not (version.saw or left_out_before):
        return ""
    s = "" if len(sent) == 1 else "s"
    if not left_out_before:
        return MSG_SENT_ALL.format(s=s, numbers=_numbers(sent))
    return MSG_SENT_SOME.format(s=s, numbers=_numbers(sent), count=len(people))


def saw_block(images: tuple[tuple[str, ...], ...], context: str = "") -> str:
    """The folded block that ends a reply's text: per image the encoder's findings, then which turns went in
    ("" when there is nothing to say)."""
    if not images and not context:
        return ""
    parts = []
    for number, lines in enumerate(images, 1):
        title = f"<b>Image {number}</b><br>" if len(images) > 1 else ""
        parts.append(f"<p>{title}{'<br>'.join(escape(line) for line in lines)}</p>")
    if context:
        parts.append(f"<p>{escape(context)}</p>")
    return MODEL_SAW.format(items="".join(parts))


def reply_content(version: ReplyVersion, before: tuple[Turn, ...] = ()) -> str:
    """A reply version as the chat shows it: the words, "(stopped)", a note, the cut mark, what the model saw
    (folded) and the figures line."""
    words = (version.text + (" " + MSG_STOPPED if version.stopped else "")).strip()
    cut = "*" + MSG_CUT.format(limit=version.cut_at) + "*" if version.cut_at else ""
    text = "\n\n".join(part for part in (words, version.note, cut) if part)  # an error with no words is its note
    text += saw_block(version.saw, context_line(version, before))
    return text + (REPLY_FIGURES.format(figures=escape(version.figures, quote=False)) if version.figures else "")


def turn_messages(turn: Turn, before: tuple[Turn, ...] = ()) -> list[dict]:
    """One turn as Chatbot messages: a person's pictures (a gone one named) then the text; a reply as one."""
    if turn.is_reply:
        return [{"role": "assistant", "content": reply_content(turn.current, before)}]
    out: list[dict] = []
    for media in turn.media:
        if media.path:
            out.append({"role": "user", "content": {"path": media.path}})
        else:
            out.append({"role": "user", "content": MSG_IMAGE_NOT_KEPT.format(name=media.name)})
    return out + ([{"role": "user", "content": turn.text}] if turn.text else [])


def pending_messages(waiting: tuple[Queued, ...] | list[Queued]) -> list[dict]:
    """Queued messages as the conversation shows them until they are sent."""
    out = []
    for message in waiting:
        images = f"[{len(message.files)} image{'s' if len(message.files) > 1 else ''}] " if message.files else ""
        out.append({"role": "user", "content": PENDING_PREFIX + images + message.text})
    return out


def chat_messages(conversation: Conversation, streaming: str | None = None,
                  waiting: tuple[Queued, ...] | list[Queued] = ()) -> list[dict]:
    """The Chatbot's value: every turn, the reply being written (`streaming`), then the waiting messages."""
    out = [m for i, turn in enumerate(conversation.turns) for m in turn_messages(turn, conversation.turns[:i])]
    if streaming is not None:
        out.append({"role": "assistant", "content": streaming})
    return out + pending_messages(waiting)
