"""What goes over the wire to an OpenAI-compatible server: request bodies, images as data URLs, and the
server's errors as the app's typed errors."""

from __future__ import annotations

import json

from app.core.errors import (
    ChatError,
    InputTooLong,
    InvalidRequest,
    ModelNotReady,
    ServerUnreachable,
    TextOnlyDeployment,
)
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.image_urls import check_image_count, image_data_url
from app.deployments.messages import (
    MSG_OPENAI_BUSY,
    MSG_OPENAI_FAILED,
    MSG_OPENAI_KEY,
    MSG_OPENAI_REFUSED,
    MSG_OPENAI_TEXT_ONLY,
    MSG_OPENAI_TOO_LONG,
    MSG_OPENAI_UNKNOWN_MODEL,
)
from app.deployments.prompts import chat_messages

TOO_LONG_HINTS = ("maximum context length", "context length", "too long", "max_model_len", "max_seq_len")
TEXT_ONLY_HINTS = ("not a multimodal", "does not support image", "multimodal", "image input")


def messages_body(request: ReplyRequest, system_prompt: str) -> list[dict]:
    """The conversation as OpenAI messages; this turn's images as image_url parts of the last user message."""
    system = system_prompt if request.system_prompt is None else request.system_prompt
    messages = chat_messages(request.conversation, system)
    images = list(request.conversation.current_images())
    if images:
        check_image_count(len(images))
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        parts = [{"type": "image_url", "image_url": {"url": image_data_url(i)}} for i in images]
        messages[last] = {"role": "user", "content": [*parts, {"type": "text", "text": messages[last]["content"]}]}
    return messages


def sampling_fields(p: SamplingParams, min_tokens: int = 0) -> dict[str, object]:
    """The sampling panel as OpenAI fields (temperature 0 is greedy; presence and frequency penalties when set)
    plus top_k, repetition_penalty and min_tokens where they differ from the server's defaults."""
    body: dict[str, object] = {"max_tokens": p.max_tokens, "seed": p.seed}
    if p.top_k <= 1 and p.top_p == 0:
        body["temperature"] = 0.0
    else:
        body.update(temperature=p.temperature, top_p=p.top_p or 1.0)
        if p.top_k > 1:
            body["top_k"] = p.top_k
    if p.repetition_penalty != 1.0:
        body["repetition_penalty"] = p.repetition_penalty
    for name in ("presence_penalty", "frequency_penalty"):
        if getattr(p, name):
            body[name] = getattr(p, name)
    if min_tokens:
        body["min_tokens"] = min_tokens
    return body


def error_detail(text: str) -> str:
    """The message of an OpenAI-style error body ({"error": {"message"}} or {"message"}/{"detail"})."""
    try:
        data = json.loads(text)
    except ValueError:
        return _sentence(text.strip()[:300] or "no detail")
    if isinstance(data, dict):
        inner = data.get("error", data)
        if isinstance(inner, dict):
            data = inner.get("message") or inner.get("detail") or inner
        else:
            data = inner
    return _sentence(str(data).strip()[:300])


def _sentence(text: str) -> str:
    """`text` ending like a sentence (servers' messages often have no full stop)."""
    return text if text.endswith((".", "!", "?")) else text + "."


def http_error(status: int, body: str, model: str) -> ChatError:
    """The app's typed error, with a plain sentence, for an HTTP error answer of the server."""
    detail = error_detail(body)
    low = detail.lower()
    if status in (401, 403):
        return ChatError(MSG_OPENAI_KEY.format(status=status))
    if status == 404 or ("model" in low and ("does not exist" in low or "not found" in low)):
        return ModelNotReady(MSG_OPENAI_UNKNOWN_MODEL.format(model=model, detail=detail))
    if status == 429:
        return ChatError(MSG_OPENAI_BUSY.format(status=status))
    if any(hint in low for hint in TOO_LONG_HINTS):
        return InputTooLong(MSG_OPENAI_TOO_LONG.format(detail=detail))
    if status in (400, 422) and any(hint in low for hint in TEXT_ONLY_HINTS) and ("image" in low or "modal" in low):
        return TextOnlyDeployment(MSG_OPENAI_TEXT_ONLY.format(detail=detail))
    if status in (400, 413, 415, 422):
        return InvalidRequest(MSG_OPENAI_REFUSED.format(detail=detail))
    if status in (502, 503, 504):
        return ServerUnreachable(MSG_OPENAI_FAILED.format(status=status, detail=detail))
    return ChatError(MSG_OPENAI_FAILED.format(status=status, detail=detail))


def stream_event(line: str) -> dict | None:
    """One server-sent event's JSON (None for comments, blank lines and the final [DONE])."""
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if not payload or payload == "[DONE]":
        return None
    try:
        event = json.loads(payload)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
