"""Compare: one prompt (and optionally images) streamed at the same time through the base model and up to three
adapters.

The images go to every column through the chat's intake: the deployment checks them (format, size, how many images
it takes) before any column opens, and each column's request carries them as the chat's would. On a model with an
adapter of its own (InternLM-XComposer2's Partial LoRA) the base column keeps that adapter on, and another adapter
is refused in a sentence unless the deployment combines adapters: the chat's rules, applied by the deployment.

Continue goes on, at the same time, with every column of a run that stopped at the max-new-tokens limit: each such
column's model gets the same prompt and images and the column's text as the start of its reply.

A column that ends is read as the chat reads a reply (a chart's table, grounded boxes, a markdown page): its
`outputs`, which the APIs give as structured fields beside the text."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from app.chat.adapter_names import adapter_named
from app.chat.chat_context import ChatContext
from app.chat.figures import figures_text, measure
from app.chat.messages import (
    BASE_MODEL_WORDS,
    MSG_COMPARE_ADAPTERS,
    MSG_COMPARE_CONTINUES,
    MSG_COMPARE_NO_COLUMNS,
    MSG_COMPARE_NOTHING_TO_CONTINUE,
    MSG_COMPARE_TOO_MANY,
)
from app.chat.reply_outputs import ReplyOutputs, as_fields, parse_reply
from app.chat.stream_columns import StreamColumns
from app.chat.turns import add_user_message, check_new_turn, open_stream, reply_text, served_family
from app.core.constants import MAX_COMPARE_ADAPTERS
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams

DEFAULT_MAX_TOKENS = 96  # new tokens per column unless the caller says (the tab's slider starts here)
WAITING, STREAMING, DONE, STOPPED, FAILED = "waiting for the first token", "streaming", "done", "stopped", "failed"
CUT = "length"  # a finish reason: the reply reached the max-new-tokens limit


@dataclass(frozen=True)
class ColumnView:
    """One column as shown: its text so far, its state, (once it has tokens) its figures line and (once done) why
    its reply ended: "length" (CUT) at the max-new-tokens limit, "stop", None when unknown; and (once done) what
    its text was parsed into, None for prose."""

    text: str
    state: str
    figures: str = ""
    finish_reason: str | None = None
    outputs: ReplyOutputs | None = None


def column_names(adapters: object) -> list[str | None]:
    """A caller's column list as CompareRun takes it: None for the base model (given as None, "" or "base
    model"), else the adapter's name; InvalidRequest in a sentence for anything but a list of names. None
    itself means the base model alone."""
    if adapters is None:
        return [None]
    if not isinstance(adapters, list | tuple) or not all(a is None or isinstance(a, str) for a in adapters):
        raise InvalidRequest(MSG_COMPARE_ADAPTERS.format(value=adapters))
    return [adapter_named(a) for a in adapters]


def column_starts(continues: object, count: int) -> list[str]:
    """A caller's `continues` as CompareRun takes it: one start text per column ("" for a fresh reply); None
    means none continues. InvalidRequest in a sentence for anything but `count` texts."""
    if continues is None:
        return [""] * count
    if not isinstance(continues, list | tuple) or len(continues) != count or \
            not all(c is None or isinstance(c, str) for c in continues):
        raise InvalidRequest(MSG_COMPARE_CONTINUES.format(count=count, value=continues))
    return [c or "" for c in continues]


def is_cut(view: ColumnView) -> bool:
    """Whether a column ended at the max-new-tokens limit (one Continue goes on with)."""
    return view.state == DONE and view.finish_reason == CUT


def column_entries(columns: list[str | None], views: list[ColumnView]) -> list[dict[str, str | None]]:
    """The columns as the APIs and the command line give them: one {column, text, state, figures, finish_reason}
    per column, `column` naming its adapter ("base model" for None), with the structured fields of a parsed reply
    (`table`, `grounding`, `markdown`)."""
    return [{"column": name or BASE_MODEL_WORDS, "text": view.text, "state": view.state, "figures": view.figures,
             "finish_reason": view.finish_reason, **as_fields(view.outputs)}
            for name, view in zip(columns, views, strict=True)]


@dataclass(frozen=True)
class _Joined:
    """A column's words as `reply_text` reads a stream's: the start it continues, then what the stream added."""

    text: str
    cancelled: bool


class CompareRun:
    """Several streams, each read by its own thread; `texts()` is a snapshot of all columns."""

    def __init__(self, ctx: ChatContext, prompt: str, adapters: list[str | None], params: SamplingParams,
                 images: list[str] | None = None, continues: list[str] | None = None):
        """`adapters`: one entry per column, None for the base model; `images`: files sent with the prompt to
        every column (checked as the chat checks a message's images); `continues`: per column, the start of its
        reply the model goes on with ("" for a fresh reply), shown before what it adds."""
        media = check_new_turn(ctx, prompt, images)  # the text, and the files as this deployment takes them
        chosen = [a or None for a in adapters]
        if not chosen:
            raise InvalidRequest(MSG_COMPARE_NO_COLUMNS)
        if len([a for a in chosen if a]) > MAX_COMPARE_ADAPTERS:
            raise InvalidRequest(MSG_COMPARE_TOO_MANY.format(limit=MAX_COMPARE_ADAPTERS))
        starts = dict(reversed(list(zip(chosen, column_starts(continues, len(chosen)), strict=True))))
        self.columns = list(dict.fromkeys(chosen))
        self._starts = [starts[name] for name in self.columns]  # a column named twice: its first start
        self._kind = ctx.deployment.kind
        asked = add_user_message(Conversation(), prompt, media)  # the text and its media (a video's frames...)
        pictures = asked.current_images()
        self._family, self._picture = served_family(ctx), (pictures[-1] if pictures else None)
        self._outputs: dict[int, ReplyOutputs | None] = {}  # each ended column's, parsed once
        self._started = time.monotonic()
        self._run = StreamColumns([partial(open_stream, ctx, asked, params, None, name, continues=start)
                                   for name, start in zip(self.columns, self._starts, strict=True)])

    def done(self) -> bool:
        return self._run.done()

    def texts(self) -> list[str]:
        out = []
        for i, stream in enumerate(self._run.streams):
            shown = _Joined(self._starts[i] + stream.text, stream.cancelled)  # a continued column's start first
            text = reply_text(shown, final=not self._run.running(i))
            out.append(f"{text}\n\n⚠️ {self._run.errors[i]}" if i in self._run.errors else text)
        return out

    def views(self) -> list[ColumnView]:
        """Every column's text, state, figures (once it has tokens) and finish reason (once done)."""
        out = []
        for i, (stream, text) in enumerate(zip(self._run.streams, self.texts(), strict=True)):
            ended = self._run.ended.get(i)
            if i in self._run.errors:
                state = FAILED
            elif ended is not None:
                state = STOPPED if stream.cancelled else DONE
            else:
                state = STREAMING if stream.chunks else WAITING
            figures = figures_text(measure(stream, self._started, ended), self.columns[i], self._kind) \
                if stream.chunks else ""
            out.append(ColumnView(text, state, figures, stream.finish_reason if state == DONE else None,
                                  self._parsed(i, text) if state == DONE else None))
        return out

    def _parsed(self, index: int, text: str) -> ReplyOutputs | None:
        if index not in self._outputs:
            self._outputs[index] = parse_reply(text.strip(), self._family, self._picture) if text.strip() else None
        return self._outputs[index]

    def cancel(self) -> None:
        self._run.cancel()

    def updates(self) -> Iterator[list[str]]:
        """Texts of every column, every UPDATE_SECONDS until every column has finished."""
        for views in self.view_updates():
            yield [view.text for view in views]

    def view_updates(self) -> Iterator[list[ColumnView]]:
        """Every column's view, every UPDATE_SECONDS until every column has finished."""
        try:
            yield from self._run.snapshots(self.views)
        finally:
            self.cancel()

    def entry_updates(self) -> Iterator[list[dict[str, str | None]]]:
        """`column_entries` of every column each time one changed, until every column has finished (the last
        update shows every column's end state); a reader that stops early cancels every column."""
        last = None
        try:
            for views in self.view_updates():
                if views != last:  # the first snapshot with every column ended always differs from the one before
                    yield column_entries(self.columns, views)
                last = views
        finally:
            self.cancel()


def continue_cut(ctx: ChatContext, prompt: str, columns: list[str | None], views: list[ColumnView],
                 params: SamplingParams, images: list[str] | None = None) -> CompareRun:
    """A run that goes on with every column of a finished run (`columns`, their `views`) cut at the token limit:
    the same prompt and images, each column's text as the start of its reply; InvalidRequest when none was cut."""
    cut = [(name, view.text) for name, view in zip(columns, views, strict=True) if is_cut(view)]
    if not cut:
        raise InvalidRequest(MSG_COMPARE_NOTHING_TO_CONTINUE)
    return CompareRun(ctx, prompt, [name for name, _ in cut], params, images=images,
                      continues=[text for _, text in cut])
