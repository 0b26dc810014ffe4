"""The deployment a configuration names: an OpenAI-compatible URL, Triton's llmapi model, or the engine topology."""

from __future__ import annotations

from pathlib import Path

from app.adapters.registry import AdapterRegistry
from app.core.errors import ChatError
from app.deployments.llmapi.deployment import LlmApiDeployment
from app.deployments.messages import MSG_API_KEY_FILE
from app.deployments.openai_compat.deployment import OpenAICompatDeployment
from app.deployments.prompts import DEFAULT_TEMPLATE
from app.deployments.runner.deployment import RunnerDeployment
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.triton.client import TritonChatClient

DEPLOYMENTS = ("engine", "llmapi", "runner")  # Triton kinds: engine topology, 1.x llmapi model, run.py's runner


def read_api_key(path: str | Path | None) -> str | None:
    """The first line of the key file (None without a file); ChatError when it cannot be read."""
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip().splitlines()[0].strip() or None
    except (OSError, IndexError, UnicodeDecodeError) as exc:
        raise ChatError(MSG_API_KEY_FILE.format(path=path, detail=getattr(exc, "strerror", None) or exc)) from None


def connect(config, registry: AdapterRegistry, triton_url: str | None = None):
    """The deployment for an AppConfig (duck-typed: the config lives in app.chat)."""
    if getattr(config, "openai_url", None) and triton_url is None:
        return OpenAICompatDeployment(config.openai_url, registry, model=config.openai_model or None,
                                      api_key=read_api_key(config.api_key_file), adapters_as=config.adapters_as,
                                      system_prompt=config.system_prompt)
    client = TritonChatClient(triton_url or config.triton_url, model=config.model)
    if getattr(config, "deployment", "engine") == "runner":
        return RunnerDeployment(client, registry, metrics=config.metrics_url if triton_url is None else None,
                                engine_dir=config.engine_dir, tokenizer_dir=config.tokenizer_dir)
    if getattr(config, "deployment", "engine") == "llmapi":
        return LlmApiDeployment(client, registry, template=config.template or DEFAULT_TEMPLATE,
                                tokenizer_dir=config.tokenizer_dir,
                                system_prompt=config.system_prompt, server_adapters_dir=config.server_adapters_dir,
                                metrics=config.metrics_url if triton_url is None else None)
    return TritonEngineDeployment(client, registry, template=config.template, tokenizer_dir=config.tokenizer_dir,
                                  system_prompt=config.system_prompt, engine_dir=config.engine_dir,
                                  metrics=config.metrics_url if triton_url is None else None,
                                  model_adapter=getattr(config, "model_adapter", None))
