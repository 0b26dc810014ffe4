"""The chat panel's behaviour without Gradio widgets: validate, shape the history, stream, cancel.

Every request goes through the deployment interface (ctx.deployment); adapters are names, None for the
base model (the "base model" label is the web layer's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from app.chat.adapter_check import Verdict, reply_shows_adapter
from app.chat.context import AppContext
from app.chat.figures import figures_text, measure
from app.chat.messages import (
    MSG_EMPTY_PROMPT,
    MSG_NO_REGENERATE,
    MSG_NO_TEXT_REPLY,
    MSG_NOTHING_TO_CONTINUE,
    MSG_PROMPT_TOO_LONG,
)
from app.chat.model_saw import image_reports, saw_lines
from app.chat.throttle import throttled
from app.chat.versions import Reply, ReplyVersion, any_reply, reply_message, reply_of
from app.core.constants import (
    ADAPTER_TAG,
    MAX_CONVERSATION_CHARS,
    MAX_CONVERSATION_MESSAGES,
    MAX_PROMPT_CHARS,
)
from app.core.errors import ChatError, InvalidRequest
from app.core.messages import MSG_CONVERSATION_TOO_LONG, MSG_CONVERSATION_TOO_MANY_MESSAGES, MSG_STOPPED
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest, check_adapter_name
from app.deployments.prompts import current_turn_images, file_path, message_text

__all__ = ["current_turn_images", "file_path"]  # history helpers, re-exported for the pages


def validate_user_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InvalidRequest(MSG_EMPTY_PROMPT)
    if len(text) > MAX_PROMPT_CHARS:
        raise InvalidRequest(MSG_PROMPT_TOO_LONG.format(limit=MAX_PROMPT_CHARS))
    return text


def add_user_message(history: list[dict], text: str, files: list[str] | None) -> list[dict]:
    """History with the new user turn (images first, then the text); InvalidRequest for bad text."""
    text = validate_user_text(text)
    turn = [{"role": "user", "content": {"path": path}} for path in files or []]
    return [*history, *turn, {"role": "user", "content": text}]


def check_new_turn(ctx: AppContext, text: str, files: list[str] | None) -> None:
    """Refuse a message before it enters the history: bad text, images a deployment cannot take."""
    validate_user_text(text)
    if files:
        ctx.deployment.check_images(files, text)  # raises with the specific message


def without_last_reply(history: list[dict]) -> list[dict]:
    """History up to the last user turn (for Regenerate)."""
    out = list(history)
    while out and out[-1].get("role") == "assistant":
        out.pop()
    if not out:
        raise InvalidRequest(MSG_NO_REGENERATE)
    return out


def reply_adapter(message: dict) -> str | None:
    """The adapter of an assistant reply's shown version (None for the base model)."""
    return any_reply(message).current.adapter


def model_turn(message: dict) -> dict:
    """A message as the model gets it back: a reply's shown version as its words alone."""
    reply = reply_of(message)
    return {"role": "assistant", "content": reply.current.text} if reply is not None else message


def history_for(history: list[dict], adapter: str | None, mode: str = "same adapter") -> list[dict]:
    """The turns the model sees: all of them, or only exchanges answered by `adapter` (and the new turn)."""
    if mode == "whole conversation":
        return [model_turn(m) for m in history]
    wanted = adapter or None
    kept, pending = [], []
    for message in history:
        if message.get("role") == "assistant":
            if reply_adapter(message) == wanted:
                kept += [*pending, model_turn(message)]
            pending = []
        else:
            pending.append(message)
    return kept + pending


def check_adapter(ctx: AppContext, adapter: str | None) -> str | None:
    """The adapter to use (None for the base model); InvalidRequest when the deployment has no such adapter."""
    return check_adapter_name(adapter, ctx.deployment.adapter_names()) if adapter else None


def check_conversation(history: list[dict], system_prompt: str | None) -> None:
    """Refuse a conversation over the app's bounds (messages, characters of every message and the system
    prompt) before any template, tokenizer or server sees it."""
    if len(history) > MAX_CONVERSATION_MESSAGES:
        raise InvalidRequest(MSG_CONVERSATION_TOO_MANY_MESSAGES.format(count=len(history),
                                                                       limit=MAX_CONVERSATION_MESSAGES))
    chars = len(system_prompt or "") + sum(len(message_text(m.get("content"))) for m in history)
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_CONVERSATION_TOO_LONG.format(chars=chars, limit=MAX_CONVERSATION_CHARS))


def open_stream(ctx: AppContext, history: list[dict], params: SamplingParams, system_prompt: str | None,
                adapter: str | None, images: list[str | bytes] | None = None, stop: list[str] | None = None,
                min_tokens: int = 0, continues: str = ""):
    """Open the reply to `history` through the deployment (adapter None for the base model).

    `images` (paths or bytes) default to the files attached to the last user turn of `history`;
    `stop` adds the caller's stop words; `min_tokens` holds off the end of sequence. The conversation is
    bounded in characters before the deployment (which bounds tokens, reads images) or the server sees it.
    `continues`: the start of the reply to go on with (Continue).
    """
    check_conversation(history, ctx.config.system_prompt if system_prompt is None else system_prompt)
    request = ReplyRequest(messages=history, sampling=params, adapter=adapter or None, images=images,
                           system_prompt=system_prompt, stop=tuple(stop or ()), min_tokens=min_tokens,
                           continues=continues)
    return ctx.live.track(ctx.deployment.open_reply(request))  # counted for the Server tab


CHECK_WAIT_SECONDS = 20.0  # how long a finished first reply with an adapter waits for its check


def reply_text(stream, adapter: str | None, final: bool, note: str = "", figures: str = "", saw: str = "",
               keep_space: bool = False) -> str:
    """The reply as shown: its text ("(stopped)" when cancelled), a note, what the model saw (folded), the
    figures line, the adapter tag. `keep_space`: the text continues a reply (its leading space is kept)."""
    text = stream.text if keep_space else stream.text.strip() if final else stream.text.lstrip()
    if final and stream.cancelled:
        text = (text + " " + MSG_STOPPED).strip()
    elif final and not text:
        text = MSG_NO_TEXT_REPLY
    if note:
        text += "\n\n" + note
    return text + saw + figures + (ADAPTER_TAG.format(adapter=adapter) if adapter else "")


def check_note(ctx: AppContext, adapter: str | None, prompt: str = "", reply: str = "",
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


def stream_reply(ctx: AppContext, session: str, history: list[dict], params: SamplingParams,
                 system_prompt: str | None = None, adapter: str | None = None,
                 history_mode: str = "same adapter", earlier: Reply | None = None) -> Iterator[list[dict]]:
    """Yield the history with a growing assistant reply; errors become a plain reply text. `earlier`: the
    reply this one regenerates, whose versions are kept (the new one shown)."""
    yield from _streamed(ctx, session, history, params, system_prompt, adapter, history_mode, "",
                         lambda version: earlier.added(version) if earlier else Reply((version,)))


def continue_reply(ctx: AppContext, session: str, history: list[dict], params: SamplingParams,
                   system_prompt: str | None = None, history_mode: str = "same adapter") -> Iterator[list[dict]]:
    """Yield the history with its last reply (cut at max tokens) growing: the model goes on from its words, with
    the reply's own adapter; the shown version is extended. InvalidRequest when the last reply was not cut."""
    reply = reply_of(history[-1]) if history else None
    if reply is None or not reply.current.cut_at:
        raise InvalidRequest(MSG_NOTHING_TO_CONTINUE)
    version = reply.current
    yield from _streamed(ctx, session, history[:-1], params, system_prompt, version.adapter, history_mode,
                         version.text, reply.with_current)


def _streamed(ctx: AppContext, session: str, history: list[dict], params: SamplingParams, system_prompt: str | None,
              adapter: str | None, history_mode: str, start: str,
              recorded: Callable[[ReplyVersion], Reply]) -> Iterator[list[dict]]:
    """Stream a reply to `history` that begins with `start` (Continue) and yield the history with it; the last
    update carries the reply's record, `recorded(finished version)`."""
    history = [*history, {"role": "assistant", "content": start}]
    stream = None
    started = time.monotonic()
    try:
        stream = open_stream(ctx, history_for(history[:-1], adapter, history_mode), params, system_prompt, adapter,
                             continues=start)
        ctx.active.register(session, stream)
        if adapter:
            ctx.adapter_checks.start(ctx.deployment, adapter)
        for text in throttled(stream, lambda: start + reply_text(stream, None, final=False, keep_space=bool(start))):
            history[-1] = {"role": "assistant", "content": text}
            yield history
        words = (start + stream.text).strip() if start else stream.text.strip()
        prompt = last_user_text(history)
        version = ReplyVersion(
            text=words or MSG_NO_TEXT_REPLY, adapter=adapter, stopped=stream.cancelled,
            figures=figures_text(measure(stream, started), adapter, ctx.deployment.kind),
            saw=saw_lines(image_reports(stream)), note=check_note(ctx, adapter, prompt, words, wait=0.0),
            cut_at=int(params.max_tokens) if stream.finish_reason == "length" and not stream.cancelled else None)
        history[-1] = reply_message(recorded(version))
        yield history
        # The adapter's first check probes once the replies have ended (app.chat.adapter_check): the reply is shown
        # finished meanwhile, and gets the warning if the check then finds the adapter not applied.
        late_note = check_note(ctx, adapter, prompt, words) if adapter and not version.note else ""
        if late_note:
            history[-1] = reply_message(recorded(replace(version, note=late_note)))
            yield history
    except ChatError as exc:
        partial = (start + stream.text).strip() if stream is not None else start
        history[-1] = reply_message(recorded(ReplyVersion(text=partial, adapter=adapter, note=f"⚠️ {exc}")))
        yield history
    finally:
        if stream is not None:
            ctx.active.unregister(session, stream)
            stream.cancel()


def last_user_text(history: list[dict]) -> str:
    for message in reversed(history):
        if message.get("role") == "user":
            text = message_text(message.get("content"))
            if text:
                return text
    return ""
