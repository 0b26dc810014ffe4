"""The chat panel's behaviour without Gradio widgets: validate, build the prompt, stream, cancel."""

from __future__ import annotations

from collections.abc import Iterator

from app.client import SamplingParams
from app.constants import MAX_PROMPT_CHARS, MSG_EMPTY_PROMPT, MSG_PROMPT_TOO_LONG, MSG_STOPPED, MSG_TEXT_ONLY
from app.context import AppContext
from app.errors import ChatError, InvalidRequest
from app.prompts import message_text


def validate_user_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InvalidRequest(MSG_EMPTY_PROMPT)
    if len(text) > MAX_PROMPT_CHARS:
        raise InvalidRequest(MSG_PROMPT_TOO_LONG.format(limit=MAX_PROMPT_CHARS))
    return text


def add_user_message(history: list[dict], text: str, files: list[str] | None, accepts_images: bool) -> list[dict]:
    """History with the new user turn; InvalidRequest with a plain message when it cannot be sent."""
    if files and not accepts_images:
        raise InvalidRequest(MSG_TEXT_ONLY)
    text = validate_user_text(text)
    turn = [{"role": "user", "content": {"path": path}} for path in files or []]
    return [*history, *turn, {"role": "user", "content": text}]


def without_last_reply(history: list[dict]) -> list[dict]:
    """History up to the last user turn (for Regenerate)."""
    out = list(history)
    while out and out[-1].get("role") == "assistant":
        out.pop()
    if not out:
        raise InvalidRequest("There is no message to regenerate yet.")
    return out


def stream_reply(ctx: AppContext, session: str, history: list[dict], params: SamplingParams,
                 system_prompt: str | None = None) -> Iterator[list[dict]]:
    """Yield the history with a growing assistant reply; errors become a plain reply text."""
    history = [*history, {"role": "assistant", "content": ""}]
    stream = None
    try:
        prompts = ctx.prompts()
        prompt = prompts.build(history[:-1], system_prompt)
        stop_words = prompts.stop_words()
        stream = ctx.client.stream(prompt, params, extra={"stop_words": stop_words or None})
        ctx.active.register(session, stream)
        for _ in stream:
            history[-1] = {"role": "assistant", "content": stream.text.lstrip()}
            yield history
        if stream.cancelled:
            history[-1] = {"role": "assistant", "content": (stream.text.strip() + " " + MSG_STOPPED).strip()}
        elif not stream.text.strip():
            history[-1] = {"role": "assistant", "content": "(the model returned no text)"}
        yield history
    except ChatError as exc:
        partial = stream.text.strip() + "\n\n" if stream is not None and stream.text.strip() else ""
        history[-1] = {"role": "assistant", "content": f"{partial}⚠️ {exc}"}
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
