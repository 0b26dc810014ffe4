"""The engine topology's max input length in tokens, read from the engine's config.json."""

from __future__ import annotations

import json
from pathlib import Path

from app.core.errors import ChatError, InputTooLong, ModelNotReady, ServerUnreachable
from app.deployments.messages import MSG_CONVERSATION_TOO_MANY_TOKENS
from app.triton.client import TritonChatClient

UNKNOWN = object()  # not asked yet (or the server was down): ask again


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


def engine_model(client: TritonChatClient) -> str | None:
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


def served_engine_dir(client: TritonChatClient, engine_dir: str | None) -> str | None:
    """The engine folder: the app's --engine-dir, else the engine model's gpt_model_path (on this machine)."""
    if engine_dir:
        return engine_dir
    engine = engine_model(client)
    if not engine:
        return None
    path = client.model_config(engine).get("parameters", {}).get("gpt_model_path", {}).get("string_value", "")
    return path if path and Path(path).is_dir() else None


def read_input_limit(client: TritonChatClient, engine_dir: str | None) -> object:
    """The limit (int or None when there is none to read), or UNKNOWN while the server cannot say."""
    limit = engine_input_limit(engine_dir) if engine_dir else None
    try:
        engine = None if limit else engine_model(client)
        if engine:
            params = client.model_config(engine).get("parameters", {})
            path = params.get("gpt_model_path", {}).get("string_value", "")
            limit = engine_input_limit(path) if path else None
    except (ServerUnreachable, ModelNotReady):
        return UNKNOWN  # ask again once the server (or the model) is up
    except ChatError:
        limit = None  # no engine model to read: the server's own check applies
    return limit


def check_prompt_tokens(limit: int | None, prompts, prompt: str) -> None:
    """Refuse a prompt over `limit` tokens, counted with the tokenizer when the app has it."""
    if limit is None:
        return
    tokens = prompts.count_tokens(prompt)
    if tokens is not None and tokens > limit:
        raise InputTooLong(MSG_CONVERSATION_TOO_MANY_TOKENS.format(tokens=tokens, limit=limit))
