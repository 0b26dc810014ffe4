"""What every page gets: the app config, the deployment (the one interface to the server) and live streams."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from app.adapters.registry import DEFAULT_ADAPTERS_DIR, AdapterRegistry
from app.adapters.training import Trainer, default_base_dir
from app.chat.adapter_check import AdapterChecks
from app.chat.live import LiveReplies
from app.chat.outbox import Outbox
from app.core.access import AccessPolicy
from app.core.constants import DEFAULT_CONCURRENCY, DEFAULT_HOST, DEFAULT_MODEL, DEFAULT_UI_PORT, MAX_UPLOAD
from app.deployments.base import Deployment
from app.deployments.connect import connect
from setup.workspace import Workspace


def configfield(default, help_text: str):
    """A config field that carries its help text (shown by --help and in the UI)."""
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class AppConfig:
    triton_url: str = configfield("127.0.0.1:8001", "Triton gRPC address HOST:PORT.")
    model: str = configfield(DEFAULT_MODEL, "Model to chat with: tensorrt_llm_bls or ensemble.")
    host: str = configfield(DEFAULT_HOST, "Address the web UI binds to.")
    port: int = configfield(DEFAULT_UI_PORT, "Port of the web UI.")
    concurrency: int = configfield(DEFAULT_CONCURRENCY, "Chats generated at the same time (queue concurrency).")
    template: str | None = configfield(None, "Prompt template when the tokenizer's chat template is not readable "
                                             "(default: the served family's own, e.g. internlm2, else chatml).")
    tokenizer_dir: str | None = configfield(None, "Tokenizer folder for the chat template (default: ask the server).")
    system_prompt: str = configfield("", "System prompt put before every conversation.")
    max_file_size: str = configfield(MAX_UPLOAD, "Largest upload the UI accepts.")
    demo: bool = configfield(False, "Running the embedded CPU demo.")
    metrics_url: str | None = configfield(
        None, "Triton metrics URL for the Server tab (default: the Triton host, port 8002, /metrics).")
    adapters_dir: str = configfield(str(DEFAULT_ADAPTERS_DIR), "Folder of LoRA adapters (PEFT folders or npy pairs).")
    engine_dir: str | None = configfield(None, "Engine folder whose config.json adapters are checked against.")
    auth: tuple[tuple[str, str], ...] | None = configfield(
        None, "Username/password pairs required to open the UI (from --auth-file); needed off loopback for Build.")
    workspace: tuple[str, ...] = configfield(
        (), "Folders the web UI may read from or write to (Build, Adapters); default: the current folder and home.")
    allowed_hosts: tuple[str, ...] = configfield(
        (), "Extra host names the app answers to (its bind address and localhost always).")
    openai_url: str | None = configfield(
        None, "An OpenAI-compatible server's URL (vLLM, SGLang, NIM, trtllm-serve, Dynamo, this app) instead of Triton.")
    openai_model: str | None = configfield(None, "--openai: the base model's id (default: the first it lists).")
    api_key_file: str | None = configfield(None, "--openai: file holding the server's API key (first line).")
    deployment: str = configfield(
        "engine", "Triton deployment kind: 'engine' (ensemble / tensorrt_llm_bls, the tensorrtllm backend) or 'llmapi' "
                  "(TensorRT-LLM 1.x's Python llmapi model; --model defaults to tensorrt_llm).")
    server_adapters_dir: str | None = configfield(
        None, "llmapi: the adapters folder as the Triton server reads it (lora_path); when it is another folder the "
              "app can write (a shared mount), adapters are copied there on first use. Default: the app's own.")
    model_adapter: str | None = configfield(
        None, "The adapter that is part of the model (InternLM-XComposer2's Partial LoRA), from the adapters folder: "
              "sent with every request, weights on first use; the dropdown cannot turn it off. Default: none (the "
              "server applies its own).")
    adapters_as: str | None = configfield(
        None, "--openai: send adapters as model names ('model') or as lora_request ('lora_request'); "
              "default: detected.")

    @classmethod
    def help(cls) -> dict[str, str]:
        return {f.name: f.metadata["help"] for f in fields(cls)}


class ActiveStreams:
    """The stream each browser session is reading, so Stop can cancel it on the server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_session: dict[str, object] = {}

    def register(self, session: str, stream) -> None:
        with self._lock:
            previous = self._by_session.get(session)
            self._by_session[session] = stream
        if previous is not None and previous is not stream:
            previous.cancel()

    def unregister(self, session: str, stream) -> None:
        with self._lock:
            if self._by_session.get(session) is stream:
                del self._by_session[session]

    def cancel(self, session: str) -> bool:
        with self._lock:
            stream = self._by_session.pop(session, None)
        if stream is None:
            return False
        stream.cancel()
        return True

    def count(self) -> int:
        with self._lock:
            return len(self._by_session)


class AppContext:
    """Injected into every page builder; holds no Gradio objects."""

    def __init__(self, config: AppConfig, deployment: Deployment | None = None):
        self.config = config
        self.active = ActiveStreams()
        self.live = LiveReplies()  # the users' figures on the Server tab
        self.outbox = Outbox()  # messages sent while a reply streams, per browser session
        self.adapters = AdapterRegistry(Path(config.adapters_dir),
                                        engine_dir=Path(config.engine_dir) if config.engine_dir else None)
        self.deployment: Deployment = deployment or connect(config, self.adapters)
        # "is the adapter really applied?", once per adapter, probed with its training prompts when recorded
        # probes wait for the app's replies to end (a server may batch an adapter onto a probe of the base model)
        self.adapter_checks = AdapterChecks(self.adapters.training_pairs, replies_in_flight=self.live.in_progress)
        self.training = Trainer(self.adapters.folder, default_base_dir(config.tokenizer_dir, config.demo),
                                engine_dir=self.adapters.engine_dir)
        self._lock = threading.Lock()
        self.access = AccessPolicy(host=config.host, port=config.port, logins=bool(config.auth),
                                   workspace=Workspace.from_paths(config.workspace))

    def retarget(self, triton_url: str, **changes) -> None:
        """Point the chat at another Triton server (e.g. one the Build page just launched); `changes`: AppConfig
        fields that server needs (its deployment kind, model, the model's own adapter and adapters folder)."""
        with self._lock:
            if changes:
                self.config = replace(self.config, **changes)
                if Path(self.config.adapters_dir) != Path(self.adapters.folder):
                    self.adapters = AdapterRegistry(Path(self.config.adapters_dir), engine_dir=self.adapters.engine_dir)
                    self.adapter_checks = AdapterChecks(self.adapters.training_pairs,
                                                        replies_in_flight=self.live.in_progress)
            self.deployment = connect(self.config, self.adapters, triton_url=triton_url)
        self.adapters.forget_server_state()
