"""What every page gets: the app config, the Triton client, prompt building and live streams."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from pathlib import Path

from app.adapters.registry import DEFAULT_ADAPTERS_DIR, AdapterRegistry
from app.chat.prompts import PromptBuilder
from app.core.access import AccessPolicy
from app.core.constants import DEFAULT_CONCURRENCY, DEFAULT_HOST, DEFAULT_MODEL, DEFAULT_UI_PORT, MAX_UPLOAD
from app.core.errors import ChatError
from app.triton.client import TritonChatClient
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
    template: str = configfield("chatml", "Prompt template when the tokenizer's chat template is not readable.")
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

    def __init__(self, config: AppConfig, client: TritonChatClient | None = None):
        self.config = config
        self.client = client or TritonChatClient(config.triton_url, model=config.model)
        self.active = ActiveStreams()
        self.adapters = AdapterRegistry(Path(config.adapters_dir),
                                        engine_dir=Path(config.engine_dir) if config.engine_dir else None)
        self._prompts: PromptBuilder | None = None
        self._lock = threading.Lock()
        self.access = AccessPolicy(host=config.host, port=config.port, logins=bool(config.auth),
                                   workspace=Workspace.from_paths(config.workspace))

    def retarget(self, triton_url: str) -> None:
        """Point the chat at another Triton server (e.g. one the Build page just launched)."""
        with self._lock:
            self.client = TritonChatClient(triton_url, model=self.config.model,
                                           stall_timeout=self.client.stall_timeout)
            self._prompts = None
        self.adapters.forget_server_state()

    def _tokenizer_dir(self) -> str | None:
        if self.config.tokenizer_dir:
            return self.config.tokenizer_dir
        params = self.client.model_config("preprocessing").get("parameters", {})
        path = params.get("tokenizer_dir", {}).get("string_value", "")
        return path if path and Path(path).is_dir() else None

    def prompts(self) -> PromptBuilder:
        """The prompt builder; resolved on first use, once the server can say where its tokenizer is."""
        with self._lock:
            if self._prompts is not None:
                return self._prompts
            try:
                tokenizer_dir, settled = self._tokenizer_dir(), True
            except ChatError:  # server not up yet: use the named template now, ask again next time
                tokenizer_dir, settled = None, False
            builder = PromptBuilder(template_name=self.config.template, tokenizer_dir=tokenizer_dir,
                                    system_prompt=self.config.system_prompt)
            if settled:
                self._prompts = builder
            return builder
