"""The conversation as the chat shows it: Gradio Chatbot messages made from the typed turns (a person's pictures
as file messages before the text; a reply's shown version with its cut mark, note, "What the model saw" folded
and the figures line), the reply being written, and the messages waiting to be sent. Display only: the chat's
state is the typed Conversation, and nothing reads these messages back."""

from __future__ import annotations

from html import escape

from app.chat.messages import MSG_CUT, MSG_IMAGE_NOT_KEPT
from app.chat.outbox import Queued
from app.chat.reply_outputs import ReplyOutputs
from app.core.conversation import IMAGE, Conversation, Media, ReplyVersion, Turn
from app.core.messages import MSG_STOPPED
from app.outputs.chart_table import table_markdown
from app.outputs.grounding_picture import phrase_colour, phrase_label
from app.web.media_view import csv_file, grounded_file, strip_file
from app.web.messages import MSG_LEFT_OUT_ADAPTER, MSG_LEFT_OUT_PICTURE, MSG_SENT_ALL, MSG_SENT_SOME

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
    first = before[min(version.context)]
    reason = MSG_LEFT_OUT_PICTURE if first.media else MSG_LEFT_OUT_ADAPTER
    return MSG_SENT_SOME.format(s=s, numbers=_numbers(sent), count=len(people), reason=reason)


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


COPY_MARKDOWN = ('\n\n<details class="copy-markdown"><summary>Copy as markdown</summary>\n\n'
                 '~~~~markdown\n{text}\n~~~~\n\n</details>')  # the code block's copy button copies the page
PHRASE = '<mark class="grounded-phrase" data-box="{index}" title="box: {label}" style="background:{colour}55;' \
         'border-bottom:2px solid {colour}">{text}</mark>'


def grounded_words(outputs: ReplyOutputs) -> str:
    """The grounded reply's clean text, each phrase marked in its box's colour (named after the box's label)."""
    grounding = outputs.grounding
    text, out, at = grounding.text, [], 0
    for index, phrase in enumerate(grounding.phrases):
        if phrase.start < at or not phrase.named:
            continue
        colour = phrase_colour(index)
        out += [escape(text[at:phrase.start], quote=False),
                PHRASE.format(index=index, label=escape(phrase_label(phrase, index)), colour=colour,
                              text=escape(text[phrase.start:phrase.end], quote=False))]
        at = phrase.end
    return "".join(out) + escape(text[at:], quote=False)


def parsed_words(outputs: ReplyOutputs) -> str | None:
    """Parsed outputs as Markdown: the table, the marked clean text, the markdown page with its copy block; None
    when they hold none of these."""
    if outputs.table is not None:
        return table_markdown(outputs.table)
    if outputs.grounding is not None:
        return grounded_words(outputs)
    if outputs.markdown is not None:
        return outputs.markdown + COPY_MARKDOWN.format(text=outputs.markdown.replace("~~~~", "~~~ ~"))
    return None


def output_words(version: ReplyVersion) -> str:
    """A reply's words as its parsed outputs show them (`parsed_words`); the raw words for prose."""
    outputs = version.outputs
    words = parsed_words(outputs) if isinstance(outputs, ReplyOutputs) else None
    return version.text if words is None else words


def reply_content(version: ReplyVersion, before: tuple[Turn, ...] = ()) -> str:
    """A reply version as the chat shows it: the words (a table, grounded text or a markdown page where the reply
    was parsed into one), "(stopped)", a note, the cut mark, what the model saw (folded) and the figures line."""
    words = (output_words(version) + (" " + MSG_STOPPED if version.stopped else "")).strip()
    cut = "*" + MSG_CUT.format(limit=version.cut_at) + "*" if version.cut_at else ""
    text = "\n\n".join(part for part in (words, version.note, cut) if part)  # an error with no words is its note
    text += saw_block(version.saw, context_line(version, before))
    return text + (REPLY_FIGURES.format(figures=figures_html(version)) if version.figures else "")


def figures_html(version: ReplyVersion) -> str:
    """The figures line, escaped, with the adapter that answered shown as a label (its words unchanged)."""
    parts = [escape(part, quote=False) for part in version.figures.split(" · ")]
    if version.adapter in version.figures.split(" · "):
        at = version.figures.split(" · ").index(version.adapter)
        parts[at] = f'<span class="reply-adapter">{parts[at]}</span>'
    return " · ".join(parts)


def output_files(version: ReplyVersion) -> list[dict]:
    """The files under a parsed reply: the picture with its boxes, the table's CSV."""
    outputs = version.outputs
    if not isinstance(outputs, ReplyOutputs):
        return []
    files = [grounded_file(outputs), csv_file(outputs)]
    return [{"role": "assistant", "content": {"path": path}} for path in files if path]


def media_messages(media: Media) -> list[dict]:
    """A person's file as Chatbot messages: a picture; a video's or PDF's strip of frames and what was sent."""
    if media.kind != IMAGE:
        strip = strip_file(media)
        caption = f"{media.name}: {media.detail}" if media.detail else media.name
        return ([{"role": "user", "content": {"path": strip}}] if strip else []) + \
            [{"role": "user", "content": f'<small class="media-detail">{escape(caption, quote=False)}</small>'}]
    if media.path:
        return [{"role": "user", "content": {"path": media.path}}]
    return [{"role": "user", "content": MSG_IMAGE_NOT_KEPT.format(name=media.name)}]


def turn_messages(turn: Turn, before: tuple[Turn, ...] = ()) -> list[dict]:
    """One turn as Chatbot messages: a person's files (a gone picture named) then the text; a reply, then the
    files its outputs give (the picture with boxes, the CSV)."""
    if turn.is_reply:
        return [{"role": "assistant", "content": reply_content(turn.current, before)}, *output_files(turn.current)]
    out = [message for media in turn.media for message in media_messages(media)]
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


def message_turn(conversation: Conversation, index: int) -> int | None:
    """The place of the turn whose Chatbot messages include the message at `index` (as `chat_messages` made
    them), None past the conversation's turns (a reply being written, a waiting message)."""
    at = 0
    for place, turn in enumerate(conversation.turns):
        at += len(turn_messages(turn, conversation.turns[:place]))
        if index < at:
            return place
    return None
