"""The chat panel's behaviour without Gradio widgets: validate, build the prompt, stream, cancel."""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator
from pathlib import Path

from app.adapters.registry import BASE_MODEL
from app.chat.context import AppContext
from app.chat.prompts import ADAPTER_TAG_RE, message_text
from app.chat.throttle import throttled
from app.core.constants import (
    ADAPTER_TAG,
    MAX_CONVERSATION_CHARS,
    MAX_CONVERSATION_MESSAGES,
    MAX_PROMPT_CHARS,
    MSG_CONVERSATION_TOO_LONG,
    MSG_CONVERSATION_TOO_MANY_MESSAGES,
    MSG_CONVERSATION_TOO_MANY_TOKENS,
    MSG_EMPTY_PROMPT,
    MSG_NO_LORA,
    MSG_PROMPT_TOO_LONG,
    MSG_STOPPED,
    MSG_UNKNOWN_ADAPTER,
)
from app.core.errors import ChatError, InputTooLong, InvalidRequest, ModelNotReady, ServerUnreachable
from app.triton.client import SamplingParams, TritonChatClient
from app.vision.multimodal import prepare_images, strip_image_markers


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
        prepare_images(files, ctx.client.model_info(), text)  # raises with the specific message


def file_path(content: object) -> str | None:
    """Path of a Gradio file message content (either of the shapes Gradio 6 uses), else None."""
    if isinstance(content, list | tuple):
        return next((p for p in map(file_path, content) if p), None)
    if isinstance(content, dict):
        if content.get("type") == "file":
            return file_path(content.get("file"))
        if content.get("type", "file") != "text" and isinstance(content.get("path"), str):
            return content["path"]
    return None


def current_turn_images(history: list[dict]) -> list[str]:
    """Files attached to the trailing user turn (after the last reply)."""
    files = []
    for message in reversed(history):
        if message.get("role") != "user":
            break
        path = file_path(message.get("content"))
        if path:
            files.insert(0, path)
    return files


def model_turns(ctx: AppContext, history: list[dict], images: list[str]) -> tuple[list[dict], dict]:
    """History as the model sees it (image markers for this turn's images) and the image tensors."""
    if not images:
        return history, {}
    info = ctx.client.model_info()
    cleaned = [{**m, "content": strip_image_markers(message_text(m.get("content")), info)}
               if m.get("role") == "user" and not file_path(m.get("content")) else m for m in history]
    last = max(i for i, m in enumerate(cleaned) if m.get("role") == "user" and not file_path(m.get("content")))
    request = prepare_images(images, info, message_text(cleaned[last]["content"]))
    cleaned[last] = {**cleaned[last], "content": request.text}
    return cleaned, request.extra


def without_last_reply(history: list[dict]) -> list[dict]:
    """History up to the last user turn (for Regenerate)."""
    out = list(history)
    while out and out[-1].get("role") == "assistant":
        out.pop()
    if not out:
        raise InvalidRequest("There is no message to regenerate yet.")
    return out


def reply_adapter(message: dict) -> str | None:
    """The adapter recorded on an assistant reply (None for the base model)."""
    match = ADAPTER_TAG_RE.search(message_text(message.get("content")))
    return match.group("adapter") if match else None


def history_for(history: list[dict], adapter: str | None, mode: str = "same adapter") -> list[dict]:
    """The turns the model sees: all of them, or only exchanges answered by `adapter` (and the new turn)."""
    if mode == "whole conversation":
        return history
    wanted = None if not adapter or adapter == BASE_MODEL else adapter
    kept, pending = [], []
    for message in history:
        if message.get("role") == "assistant":
            if reply_adapter(message) == wanted:
                kept += [*pending, message]
            pending = []
        else:
            pending.append(message)
    return kept + pending


def check_adapter(ctx: AppContext, adapter: str | None) -> str | None:
    """The adapter to use (None for the base model); InvalidRequest when it cannot be applied."""
    if not adapter or adapter == BASE_MODEL:
        return None
    known = ctx.adapters.names()
    if adapter not in known:
        raise InvalidRequest(MSG_UNKNOWN_ADAPTER.format(adapter=adapter, known=", ".join(known) or "none"))
    if ctx.client.model_info().resolve("lora_task_id") is None:
        raise InvalidRequest(MSG_NO_LORA.format(model=ctx.client.model, adapter=adapter))
    return adapter


def check_conversation(history: list[dict], system_prompt: str | None) -> None:
    """Refuse a conversation over the app's bounds (messages, characters of every message and the system
    prompt) before any template, tokenizer or server sees it."""
    if len(history) > MAX_CONVERSATION_MESSAGES:
        raise InvalidRequest(MSG_CONVERSATION_TOO_MANY_MESSAGES.format(count=len(history),
                                                                       limit=MAX_CONVERSATION_MESSAGES))
    chars = len(system_prompt or "") + sum(len(message_text(m.get("content"))) for m in history)
    if chars > MAX_CONVERSATION_CHARS:
        raise InvalidRequest(MSG_CONVERSATION_TOO_LONG.format(chars=chars, limit=MAX_CONVERSATION_CHARS))


# The deployment's max input length per client (a retargeted context gets a new client, so it asks again).
_INPUT_LIMITS: weakref.WeakKeyDictionary[TritonChatClient, int | None] = weakref.WeakKeyDictionary()


def engine_input_limit(engine_dir: str | Path) -> int | None:
    """max_input_len of a TensorRT-LLM (or CPU) engine folder's config.json; None when it cannot be read."""
    try:
        config = json.loads((Path(engine_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    build = config.get("build_config") or config.get("builder_config")  # builder_config: engines before 0.8
    value = build.get("max_input_len") if isinstance(build, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _engine_model(client: TritonChatClient) -> str | None:
    """The model that runs the engine: the BLS model's tensorrt_llm_model_name, an ensemble's step, or the
    chat model itself when it declares the engine (gpt_model_path)."""
    info = client.model_info()
    if info.engine_model:
        return info.engine_model
    named = info.parameters.get("tensorrt_llm_model_name", "")
    if named and not named.startswith("${"):
        return named
    if "tensorrt_llm_model_name" in info.parameters:
        return "tensorrt_llm"
    return info.name if "gpt_model_path" in info.parameters else None


def input_token_limit(ctx: AppContext) -> int | None:
    """The deployment's max input length in tokens (from the engine's config.json, found through the engine
    model's gpt_model_path or --engine-dir); None when the app cannot read it (the server still checks)."""
    client = ctx.client
    if client in _INPUT_LIMITS:
        return _INPUT_LIMITS[client]
    limit = engine_input_limit(ctx.config.engine_dir) if ctx.config.engine_dir else None
    try:
        engine = None if limit else _engine_model(client)
        if engine:
            params = client.model_config(engine).get("parameters", {})
            path = params.get("gpt_model_path", {}).get("string_value", "")
            limit = engine_input_limit(path) if path else None
    except (ServerUnreachable, ModelNotReady):
        return None  # ask again once the server (or the model) is up
    except ChatError:
        limit = None  # no engine model to read: the server's own check applies
    _INPUT_LIMITS[client] = limit
    return limit


def check_prompt_tokens(ctx: AppContext, prompts, prompt: str) -> None:
    """Refuse a prompt over the deployment's max input length, counted with the tokenizer when the app has it."""
    limit = input_token_limit(ctx)
    if limit is None:
        return
    tokens = prompts.count_tokens(prompt)
    if tokens is not None and tokens > limit:
        raise InputTooLong(MSG_CONVERSATION_TOO_MANY_TOKENS.format(tokens=tokens, limit=limit))


def open_stream(ctx: AppContext, history: list[dict], params: SamplingParams, system_prompt: str | None,
                adapter: str | None, images: list[str | bytes] | None = None, stop: list[str] | None = None,
                min_tokens: int = 0):
    """Start the server request for the reply to `history` (through the adapter registry).

    `images` (paths or bytes) default to the files attached to the last user turn of `history`;
    `stop` adds the caller's stop words to the template's; `min_tokens` holds off the end of sequence.
    The conversation is bounded in characters, then in tokens, before images are read or the server asked.
    """
    check_conversation(history, ctx.config.system_prompt if system_prompt is None else system_prompt)
    adapter = check_adapter(ctx, adapter)
    prompts = ctx.prompts()
    prompt = prompts.build(history, system_prompt)
    check_prompt_tokens(ctx, prompts, prompt)
    turns, image_inputs = model_turns(ctx, history, current_turn_images(history) if images is None else images)
    if turns is not history:  # image markers changed the text
        prompt = prompts.build(turns, system_prompt)
    stop_words = [*prompts.stop_words(), *(stop or [])]
    extra = {"stop_words": stop_words or None, "min_length": min_tokens or None, **image_inputs}
    return ctx.adapters.stream(ctx.client, adapter, prompt, params, extra=extra)


def reply_text(stream, adapter: str | None, final: bool) -> str:
    text = stream.text.strip() if final else stream.text.lstrip()
    if final and stream.cancelled:
        text = (text + " " + MSG_STOPPED).strip()
    elif final and not text:
        text = "(the model returned no text)"
    return text + (ADAPTER_TAG.format(adapter=adapter) if adapter and adapter != BASE_MODEL else "")


def stream_reply(ctx: AppContext, session: str, history: list[dict], params: SamplingParams,
                 system_prompt: str | None = None, adapter: str | None = None,
                 history_mode: str = "same adapter") -> Iterator[list[dict]]:
    """Yield the history with a growing assistant reply; errors become a plain reply text."""
    history = [*history, {"role": "assistant", "content": ""}]
    stream = None
    try:
        stream = open_stream(ctx, history_for(history[:-1], adapter, history_mode), params, system_prompt, adapter)
        ctx.active.register(session, stream)
        for text in throttled(stream, lambda: reply_text(stream, adapter, final=False)):
            history[-1] = {"role": "assistant", "content": text}
            yield history
        history[-1] = {"role": "assistant", "content": reply_text(stream, adapter, final=True)}
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
