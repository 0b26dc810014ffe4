"""What every page gets: the app config, the deployment (the one interface to the server) and live streams.

Above app.chat: the context holds the chat's live figures, outbox, adapter checks and server list; the chat's functions
take it as app.chat.chat_context.ChatContext."""

from __future__ import annotations

import copy
import itertools
import threading
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from app.adapters.registry import DEFAULT_ADAPTERS_DIR, AdapterRegistry
from app.adapters.training import Trainer, default_base_dir
from app.chat.adapter_check import AdapterChecks
from app.chat.live import LiveReplies
from app.chat.outbox import Outbox
from app.chat.servers import ADDED, BUILD, OWN, Server, ServerList
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
    concurrency: int | None = configfield(
        None, f"Replies streamed at once, past which the OpenAI-compatible API answers 429 (default: the served "
              f"model's max_batch_size, at least {DEFAULT_CONCURRENCY}).")
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
    arena_db: str | None = configfield(
        None, "The Arena's database as a SQLAlchemy URL (e.g. postgresql://user@host/arena); default: SQLite "
              "(arena.sqlite3) in the first workspace folder.")
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
        self.servers = ServerList(Server(OWN, own_label(config, self.deployment), OWN, config, self.deployment,
                                         self.adapters, self.adapter_checks))
        self._added = itertools.count(1)
        self._server: Server | None = None  # set in a session's view (view_of)

    @property
    def server(self) -> Server:
        """The server this context talks to (the app's own, or a session's choice in `for_session`'s view)."""
        return self._server or self.servers.own

    def for_session(self, session: str | None) -> AppContext:
        """This context as `session` sees it: the deployment, adapters and settings of the server it chose (the
        app's own by default, and again once a chosen server stopped); live streams, queues and access shared."""
        return self.view_of(self.servers.chosen(session))

    def view_of(self, server: Server) -> AppContext:
        if server.id == OWN:
            return self
        view = copy.copy(self)
        view.config, view.deployment, view.adapters = server.config, server.deployment, server.adapters
        view.adapter_checks, view._server = server.adapter_checks, server
        return view

    def triton_server(self, server_id: str, label: str, triton_url: str, origin: str = BUILD,
                      running=None, **changes) -> Server:
        """List a Triton server (e.g. one the Build page launched) under `server_id`; `changes`: AppConfig fields
        that server needs (its deployment kind, model, the model's own adapter and adapters folder); `running`:
        False once its process is gone."""
        config = replace(self.config, triton_url=triton_url, openai_url=None, metrics_url=None, **changes)
        adapters = self.adapters if Path(config.adapters_dir) == Path(self.adapters.folder) else \
            AdapterRegistry(Path(config.adapters_dir), engine_dir=self.adapters.engine_dir)
        server = Server(server_id, label, origin, config, connect(config, adapters, triton_url=triton_url),
                        adapters, self._checks_for(adapters), **({"running": running} if running else {}))
        adapters.forget_server_state()
        return self.servers.add(server)

    def openai_server(self, url: str, api_key_file: str | None = None) -> Server:
        """List an OpenAI-compatible server (vLLM, trtllm-serve, SGLang, NIM, Dynamo, another of this app)."""
        config = replace(self.config, openai_url=url, openai_model=None, api_key_file=api_key_file,
                         metrics_url=None)
        deployment = connect(config, self.adapters)
        server = Server(f"{ADDED}-{next(self._added)}", f"{deployment.kind} at {url}", ADDED, config, deployment,
                        self.adapters, self._checks_for(self.adapters))
        return self.servers.add(server)

    def added_triton(self, url: str) -> Server:
        """List a Triton server at gRPC `url`, with the app's own deployment kind and model."""
        return self.triton_server(f"{ADDED}-{next(self._added)}", f"Triton at {url}", url, origin=ADDED)

    def _checks_for(self, adapters: AdapterRegistry) -> AdapterChecks:
        if adapters is self.adapters:
            return self.adapter_checks
        return AdapterChecks(adapters.training_pairs, replies_in_flight=self.live.in_progress)


def own_label(config: AppConfig, deployment: Deployment) -> str:
    """The picker's entry for the server the app started with."""
    what = "CPU demo" if config.demo else deployment.kind
    return f"This app's server ({what}) at {deployment.url}"
