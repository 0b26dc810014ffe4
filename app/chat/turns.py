"""The chat panel's behaviour without Gradio widgets: validate, choose what the model sees, stream, cancel.

Every request goes through the deployment interface (ctx.deployment); adapters are names, None for the
base model (the "base model" label is the web layer's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from app.chat.adapter_check import Verdict, reply_shows_adapter
from app.chat.chat_context import ChatContext
from app.chat.chat_stream import ChatStream
from app.chat.figures import continued_figures, figures_text, measure, with_partial_warning
from app.chat.media_intake import declared_video, media_for, pdf_media
from app.chat.messages import (
    MSG_EMPTY_PROMPT,
    MSG_NO_REGENERATE,
    MSG_NO_TEXT_REPLY,
    MSG_NOTHING_TO_CONTINUE,
    MSG_PROMPT_TOO_LONG,
)
from app.chat.model_saw import image_reports, saw_lines
from app.chat.reply_guard import reply_failed
from app.chat.reply_outputs import parse_reply
from app.chat.throttle import throttled
from app.core.constants import (
    MAX_CONVERSATION_CHARS,
    MAX_CONVERSATION_MESSAGES,
    MAX_PROMPT_CHARS,
)
from app.core.conversation import IMAGE, PDF, VIDEO, ContextPolicy, Conversation, Media, ReplyVersion, Turn
from app.core.errors import ChatError, InvalidRequest, TooManyImages
from app.core.messages import MSG_CONVERSATION_TOO_LONG, MSG_CONVERSATION_TOO_MANY_MESSAGES, MSG_STOPPED
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest, check_adapter_name


def validate_user_text(text: str, with_files: bool = False) -> str:
    """The message's text, stripped; InvalidRequest when it is empty (allowed `with_files`: a picture, video or PDF
    alone is a message, as OpenAI's API takes one, and Nougat's and Deplot's prompts ask nothing) or too long."""
    text = (text or "").strip()
    if not text and not with_files:
        raise InvalidRequest(MSG_EMPTY_PROMPT)
    if len(text) > MAX_PROMPT_CHARS:
        raise InvalidRequest(MSG_PROMPT_TOO_LONG.format(limit=MAX_PROMPT_CHARS))
    return text


def add_user_message(conversation: Conversation, text: str, files: Sequence[str | Media] | None) -> Conversation:
    """The conversation with the person's new message and its files (paths, or media already read by
    `message_media`); InvalidRequest for bad text."""
    media = tuple(item if isinstance(item, Media) else Media.of(item) for item in files or ())
    return conversation.with_turn(Turn.user(validate_user_text(text, bool(media)), media))


def served_family(ctx: ChatContext) -> str | None:
    """The family the deployment names (the runner topology's `multimodal_family`), None when it names none."""
    return ctx.deployment.family or None


def takes_video(ctx: ChatContext) -> bool:
    """Whether the served model declares a video input (the runner topology's `takes_video`)."""
    return ctx.deployment.takes_video()


def message_media(ctx: ChatContext, files: Sequence[str | bytes | Media], pages: str | None = None,
                  frame_count: int | None = None) -> tuple[Media, ...]:
    """The files of a message as media: videos sampled to the served family's frame count (or `frame_count`),
    PDFs rendered (the page range `pages`, else every page up to the limit); media already read stays, a video
    or PDF not read yet (an API's video or file part) is read. InvalidImage (a video or PDF over a limit) first."""
    family, video = served_family(ctx), takes_video(ctx)

    def read(item: str | bytes | Media) -> Media:
        if isinstance(item, Media):
            if item.kind == IMAGE or item.frames or item.source is None:
                return item
            if item.kind == PDF:  # an API's file part: a PDF, or refused as not one
                return pdf_media(item.source, item.name, pages)
            return declared_video(item.source, item.name, family=family, takes_video=video, pages=pages,
                                  frame_count=frame_count)  # an API's video part: a video, or refused as not one
        return media_for(item, family=family, takes_video=video, pages=pages, frame_count=frame_count)
    return tuple(read(item) for item in files or ())


def check_new_turn(ctx: ChatContext, text: str, files: Sequence[str | bytes | Media] | None,
                   pages: str | None = None) -> tuple[Media, ...]:
    """Refuse a message before it enters the conversation: bad text, a video or PDF over a limit, pictures a
    deployment cannot take. The message's media (read once: a video sampled, a PDF rendered); a video sent as
    frames to a deployment that takes fewer pictures is sampled to as many as fit."""
    validate_user_text(text, bool(files))
    media = message_media(ctx, files or (), pages)
    try:
        check_pictures(ctx, media, text)
    except TooManyImages as exc:
        videos = [m for m in media if m.kind == VIDEO and not m.as_video and m.source is not None]
        room = (exc.limit or 0) - sum(len(m.pictures) for m in media if m not in videos)
        if not videos or exc.limit is None or room < len(videos):
            raise
        media = message_media(ctx, [Media(m.name, m.path, m.data, VIDEO) if m in videos else m for m in media],
                              pages, frame_count=room // len(videos))
        check_pictures(ctx, media, text)
    return media


def check_pictures(ctx: ChatContext, media: Sequence[Media], text: str) -> None:
    pictures = [picture for item in media for picture in item.pictures]
    if pictures:
        ctx.deployment.check_images(pictures, text)  # raises with the specific message


def media_figures(figures: str, conversation: Conversation) -> str:
    """The figures line with how the new message's videos and PDFs went to the model ("GIF video (3.0 s, 30
    frames): 12 frames sampled evenly, sent as 12 pictures")."""
    details: list[str] = []
    for turn in reversed(conversation.turns):
        if turn.is_reply:
            break
        details[:0] = [m.detail for m in turn.media if m.detail]
    return " · ".join([figures, *details]) if details else figures


def without_last_reply(conversation: Conversation) -> Conversation:
    """The conversation up to the person's last message (for Regenerate)."""
    earlier = conversation.without_last_reply()
    if not earlier:
        raise InvalidRequest(MSG_NO_REGENERATE)
    return earlier


def check_adapter(ctx: ChatContext, adapter: str | None) -> str | None:
    """The adapter to use (None for the base model); InvalidRequest when the deployment has no such adapter."""
    return check_adapter_name(adapter, ctx.deployment.adapter_names()) if adapter else None


def check_conversation_size(messages: int, chars: int) -> None:
    """The app's bounds on a conversation, for every surface: InvalidRequest over MAX_CONVERSATION_MESSAGES
    messages or MAX_CONVERSATION_CHARS characters."""
    if messages > MAX_CONVERSATION_MESSAGES:
        raise InvalidRequest(MSG_CONVERSATION_TOO_MANY_MESSAGES.format(count=messages,
                                                                       limit=MAX_CONVERSATION_MESSAGES))
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_CONVERSATION_TOO_LONG.format(chars=chars, limit=MAX_CONVERSATION_CHARS))


def check_conversation(conversation: Conversation, system_prompt: str | None) -> None:
    """Refuse a conversation over the app's bounds (turns, characters of every turn and the system prompt)
    before any template, tokenizer or server sees it."""
    check_conversation_size(len(conversation),
                            len(system_prompt or "") + sum(len(turn.text) for turn in conversation.turns))


def open_stream(ctx: ChatContext, conversation: Conversation, params: SamplingParams, system_prompt: str | None,
                adapter: str | None, stop: list[str] | None = None, min_tokens: int = 0, continues: str = ""):
    """Open the reply to `conversation` (the turns the model is sent; the images are its last message's) through
    the deployment (adapter None for the base model).

    `stop` adds the caller's stop words; `min_tokens` holds off the end of sequence. The conversation is
    bounded in characters before the deployment (which bounds tokens, reads images) or the server sees it.
    `continues`: the start of the reply to go on with (Continue).
    """
    check_conversation(conversation, ctx.config.system_prompt if system_prompt is None else system_prompt)
    request = ReplyRequest(conversation=conversation, sampling=params, adapter=adapter or None,
                           system_prompt=system_prompt, stop=tuple(stop or ()), min_tokens=min_tokens,
                           continues=continues)
    return ChatStream.open(lambda: ctx.deployment.open_reply(request), ctx.live)  # guarded, counted


DEFAULT_POLICY = ContextPolicy()
CHECK_WAIT_SECONDS = 20.0  # how long a finished first reply with an adapter waits for its check


def reply_text(stream, final: bool, keep_space: bool = False) -> str:
    """A streamed reply's words as shown ("(stopped)" when cancelled, a note when it ended without text).
    `keep_space`: the text continues a reply (its leading space is kept)."""
    text = stream.text if keep_space else stream.text.strip() if final else stream.text.lstrip()
    if final and stream.cancelled:
        text = (text + " " + MSG_STOPPED).strip()
    elif final and not text:
        text = MSG_NO_TEXT_REPLY
    return text


def check_note(ctx: ChatContext, adapter: str | None, prompt: str = "", reply: str = "",
               wait: float = CHECK_WAIT_SECONDS) -> str:
    """The warning for a reply whose adapter the check found not applied (else ""): only for a definite "not
    applied", and never on a reply that shows the adapter itself (app.chat.adapter_check.reply_shows_adapter).
    Waits up to `wait` seconds for a check still running."""
    if not adapter:
        return ""
    result = ctx.adapter_checks.result(ctx.deployment, adapter, wait=wait)
    if result is None or result.verdict is not Verdict.NOT_APPLIED or reply_shows_adapter(result, prompt, reply):
        return ""
    return result.message


@dataclass(frozen=True)
class ReplyUpdate:
    """A reply on its way: the conversation (ending with the finished reply once it has ended) and, while the reply
    streams, its words so far (None once it has ended)."""

    conversation: Conversation
    streaming: str | None = None

    @property
    def reply(self) -> Turn | None:
        """The finished reply (None while streaming)."""
        return self.conversation.last_reply if self.streaming is None else None


@dataclass(frozen=True)
class ReplyRecipe:
    """How to make a reply: the sampling, the system prompt, the adapter (None: the base model) and which earlier
    turns the model is sent."""

    params: SamplingParams
    system_prompt: str | None = None
    adapter: str | None = None
    policy: ContextPolicy = ContextPolicy()


def stream_reply(ctx: ChatContext, session: str, conversation: Conversation, params: SamplingParams,
                 system_prompt: str | None = None, adapter: str | None = None,
                 policy: ContextPolicy = DEFAULT_POLICY, earlier: Turn | None = None) -> Iterator[ReplyUpdate]:
    """Yield the reply to `conversation` as it grows, then the conversation with it; errors become the reply's note.
    `earlier`: the reply this one regenerates, whose versions are kept (the new one shown)."""
    recipe = ReplyRecipe(params, system_prompt, adapter, policy)
    yield from _streamed(ctx, session, conversation, recipe, "",
                         lambda version: earlier.added(version) if earlier else Turn.reply(version))


def continue_reply(ctx: ChatContext, session: str, conversation: Conversation, params: SamplingParams,
                   system_prompt: str | None = None, policy: ContextPolicy = DEFAULT_POLICY) -> Iterator[ReplyUpdate]:
    """Yield the conversation's last reply (cut at max tokens) growing: the model goes on from its words, with
    the reply's own adapter; the shown version is extended. InvalidRequest when the last reply was not cut."""
    reply = conversation.last_reply
    if reply is None or not reply.current.can_continue:
        raise InvalidRequest(MSG_NOTHING_TO_CONTINUE)
    version = reply.current
    recipe = ReplyRecipe(params, system_prompt, version.adapter, policy)
    yield from _streamed(ctx, session, conversation.without_last_reply(), recipe, version.text,
                         reply.with_current, earlier_figures=version.figures)


def _streamed(ctx: ChatContext, session: str, conversation: Conversation, recipe: ReplyRecipe, start: str,
              recorded: Callable[[ReplyVersion], Turn], earlier_figures: str = "") -> Iterator[ReplyUpdate]:
    """Stream a reply to `conversation` that begins with `start` (Continue: `earlier_figures` are the figures of
    the reply before it, so the count covers the whole reply) and yield its growing text, then the conversation
    with the reply `recorded(finished version)`."""
    stream = None
    started = time.monotonic()
    adapter, params = recipe.adapter, recipe.params
    context = conversation.context_for_reply(recipe.policy, adapter)
    try:
        stream = open_stream(ctx, context.conversation, params, recipe.system_prompt, adapter, continues=start)
        ctx.active.register(session, stream)
        if adapter:
            ctx.adapter_checks.start(ctx.deployment, adapter)
        for text in throttled(stream, lambda: start + reply_text(stream, final=False, keep_space=bool(start))):
            yield ReplyUpdate(conversation, text)
        words = (start + stream.text).strip() if start else stream.text.strip()
        prompt = conversation.last_user_text()
        pictures = context.conversation.current_images()
        version = ReplyVersion(
            text=words or MSG_NO_TEXT_REPLY, adapter=adapter, sampling=params, stopped=stream.cancelled,
            figures=with_partial_warning(
                media_figures(continued_figures(figures_text(measure(stream, started), adapter, ctx.deployment.kind),
                                                earlier_figures), context.conversation),
                ctx.deployment.adapter_audit(adapter) if adapter else None, adapter, conversation),
            outputs=parse_reply(words, served_family(ctx), pictures[-1] if pictures else None) if words else None,
            saw=saw_lines(image_reports(stream)), context=context.places,
            note=check_note(ctx, adapter, prompt, words, wait=0.0),
            cut_at=int(params.max_tokens) if stream.finish_reason == "length" and not stream.cancelled else None)
        yield ReplyUpdate(conversation.with_turn(recorded(version)))
        # The adapter's first check probes once the replies have ended (app.chat.adapter_check): the reply is shown
        # finished meanwhile, and gets the warning if the check then finds the adapter not applied.
        late_note = check_note(ctx, adapter, prompt, words) if adapter and not version.note else ""
        if late_note:
            yield ReplyUpdate(conversation.with_turn(recorded(replace(version, note=late_note))))
    except Exception as exc:  # noqa: BLE001 - every reply ends with a sentence (app.chat.reply_guard)
        error = exc if isinstance(exc, ChatError) else reply_failed(exc)
        partial = (start + stream.text).strip() if stream is not None else start
        failed = ReplyVersion(text=partial, adapter=adapter, sampling=params, context=context.places,
                              note=f"⚠️ {error}")
        yield ReplyUpdate(conversation.with_turn(recorded(failed)))
    finally:
        if stream is not None:
            ctx.active.unregister(session, stream)
            stream.cancel()
