"""Any OpenAI-compatible server behind the deployment interface: vLLM, SGLang, NIM, trtllm-serve, a Dynamo
frontend, or this app's own API.

Adapters go as model names (vLLM, SGLang, NIM, this app) or as `lora_request` in the body (trtllm-serve:
name, int id and a path the server reads), by `adapters_as` or detected from /v1/models. Where the server
loads adapters at run time (vLLM's /v1/load_lora_adapter), `register_adapter` registers one there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from app.adapters.audit import LoraTarget
from app.adapters.registry import AdapterRegistry
from app.core.constants import STREAM_STALL_SECONDS
from app.core.conversation import Conversation
from app.core.errors import ChatError, ModelNotReady, ServerUnreachable
from app.core.sampling import SamplingParams
from app.deployments.base import (
    AdapterState,
    DeploymentDefaults,
    DeploymentStatus,
    LoraCacheReport,
    PlainAdapters,
    Probe,
    ReplyRequest,
    check_adapter_name,
)
from app.deployments.image_urls import check_image_count
from app.deployments.messages import (
    CONTINUE_TURN,
    MSG_LOADED_AT_RUNTIME,
    MSG_LORA_METRICS_UNREACHABLE,
    MSG_NO_LORA_METRIC,
    MSG_NO_RUNTIME_LOADING,
    MSG_OPENAI_EMPTY,
    MSG_OPENAI_NO_MODEL,
    MSG_OPENAI_NOT_OPENAI,
    MSG_OPENAI_UNREACHABLE,
    MSG_SENT_AS_LORA_REQUEST,
    MSG_SHAPES_NO_LISTING,
    MSG_SHAPES_NO_ROOT,
    MSG_SHAPES_REMOTE,
    MSG_TRTLLM_SERVE_NO_LORA,
    OPENAI_KIND,
)
from app.deployments.openai_compat.lora_metrics import parse_lora_info
from app.deployments.openai_compat.stream import OpenAIStream
from app.deployments.openai_compat.wire import http_error, messages_body, sampling_fields
from app.vision.images import load_image
from setup.catalog.server_metrics import trtllm_serve_metrics, vllm_lora_metric
from setup.lora.audit import model_target_or_none

LOOPBACK = ("127.0.0.1", "localhost", "::1")

ADAPTERS_AS = ("model", "lora_request")
LIST_SECONDS = 5.0  # the model list is read again after this long
METRICS_TIMEOUT = 3.0  # the Server tab asks /metrics every few seconds: a slow answer is skipped, not waited for
TOP_LOGPROBS = 5


def api_base(url: str) -> str:
    """The server's address ending in /v1 (users give it with or without)."""
    root = url.rstrip("/").removesuffix("/v1")
    return root + "/v1"


@dataclass(frozen=True)
class Listing:
    """What /v1/models says: every entry by id, the base model and the adapters."""

    entries: dict[str, dict]
    base: str
    adapters: tuple[str, ...]
    read_at: float


class OpenAICompatDeployment(PlainAdapters, DeploymentDefaults):
    """One OpenAI-compatible server and its base model (`model`, or the first listed model without a parent)."""

    kind = OPENAI_KIND

    def __init__(self, url: str, registry: AdapterRegistry, model: str | None = None, api_key: str | None = None,
                 adapters_as: str | None = None, system_prompt: str = "",
                 stall_timeout: float = STREAM_STALL_SECONDS):
        self.url = api_base(url)
        self.root = self.url.removesuffix("/v1")
        self.registry, self.system_prompt, self.stall_timeout = registry, system_prompt, stall_timeout
        self._model, self._adapters_as, self._api_key = model, adapters_as, api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(headers=headers, timeout=httpx.Timeout(10.0),
                                 limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self._listing: Listing | None = None
        self._target: tuple[str, LoraTarget | None] = ("", None)  # (the base's root, its target)
        self._lock = threading.Lock()

    # ---- the model list ----------------------------------------------------------------------------
    def _read_listing(self) -> Listing:
        address = self.url + "/models"
        try:
            reply = self.http.get(address)
        except httpx.HTTPError as exc:
            raise ServerUnreachable(MSG_OPENAI_UNREACHABLE.format(url=self.url, detail=exc)) from None
        if reply.status_code != 200:
            raise http_error(reply.status_code, reply.text, self._model or "")
        try:
            entries = {str(e["id"]): e for e in reply.json()["data"]}
        except (ValueError, KeyError, TypeError):
            raise ServerUnreachable(MSG_OPENAI_NOT_OPENAI.format(url=self.url)) from None
        if not entries:
            raise ModelNotReady(MSG_OPENAI_EMPTY.format(url=self.url))
        base = self._model or next((i for i, e in entries.items() if not e.get("parent")), next(iter(entries)))
        if base not in entries:
            raise ModelNotReady(MSG_OPENAI_NO_MODEL.format(url=self.url, model=base, known=", ".join(entries)))
        adapters = tuple(i for i, e in entries.items() if i != base and e.get("parent") in (None, base))
        return Listing(entries, base, adapters, time.monotonic())

    def listing(self, refresh: bool = False) -> Listing:
        with self._lock:
            stale = self._listing is None or time.monotonic() - self._listing.read_at > LIST_SECONDS
            if refresh or stale:
                self._listing = self._read_listing()
            return self._listing

    @property
    def model(self) -> str:
        if self._model:
            return self._model
        try:
            return self.listing().base
        except ChatError:
            return ""

    def lora_target(self) -> LoraTarget:
        """Every language-model module (vLLM drops a VLM's tower), checked against the served model's shapes when
        the server runs on this machine and lists the folder it loaded (vLLM's `root`) with a config.json; else
        unchecked, and the target says why (a remote server, no model folder as the root, no model list)."""
        try:
            listing = self.listing()
        except ChatError as exc:
            return LoraTarget(server=self.kind, unchecked=MSG_SHAPES_NO_LISTING.format(detail=exc))
        root = str(listing.entries[listing.base].get("root") or "")
        if root != self._target[0] or self._target[1] is None:
            host = urlsplit(self.url).hostname or self.url
            local = host in LOOPBACK and Path(root).is_absolute()
            found = model_target_or_none(Path(root), self.kind, listing.base) if local else None
            why = "" if found else MSG_SHAPES_NO_ROOT.format(root=root or "none") if host in LOOPBACK else \
                MSG_SHAPES_REMOTE.format(host=host)
            self._target = (root, found or LoraTarget(server=self.kind, model=listing.base, unchecked=why))
        return self._target[1]

    def adapters_as(self) -> str:
        """'model' or 'lora_request': the flag, else trtllm-serve (lists itself as tensorrt_llm) gets lora_request."""
        if self._adapters_as:
            return self._adapters_as
        try:
            listing = self.listing()
        except ChatError:
            return "model"
        owner = str(listing.entries[listing.base].get("owned_by", "")).lower()
        return "lora_request" if "tensorrt" in owner and not listing.adapters else "model"

    # ---- readiness ---------------------------------------------------------------------------------
    def status(self) -> DeploymentStatus:
        try:
            listing = self.listing(refresh=True)
        except ModelNotReady as exc:
            return DeploymentStatus(live=True, ready=False, server=OPENAI_KIND, detail=str(exc))
        except ChatError as exc:
            return DeploymentStatus(live=False, ready=False, server=OPENAI_KIND, detail=str(exc))
        owner = listing.entries[listing.base].get("owned_by")
        return DeploymentStatus(live=True, ready=True, server=f"{OPENAI_KIND}" + (f" ({owner})" if owner else ""))

    def observe(self, status: DeploymentStatus) -> None:
        if not status.live:
            self.registry.forget_server_state()

    def metrics_url(self) -> str | None:
        return self.root + "/metrics"

    def lora_cache(self) -> LoraCacheReport:
        """The server's own LoRA figures from its /metrics (vLLM's vllm:lora_requests_info); trtllm-serve's metrics
        have none (setup/data/server_lora_metrics.yaml says what that was read from), nor do the others here."""
        try:
            owner = str(self.listing().entries[self.listing().base].get("owned_by", "")).lower()
        except ChatError:
            owner = ""
        if "tensorrt" in owner:
            return LoraCacheReport(note=MSG_TRTLLM_SERVE_NO_LORA.format(release=trtllm_serve_metrics().release))
        url, names = self.metrics_url(), vllm_lora_metric()
        try:
            reply = self.http.get(url, timeout=METRICS_TIMEOUT)
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            return LoraCacheReport(note=MSG_LORA_METRICS_UNREACHABLE.format(url=url, detail=exc))
        figures = parse_lora_info(reply.text, names, now=time.time())
        if figures is None:
            return LoraCacheReport(note=MSG_NO_LORA_METRIC.format(url=url, metric=names.metric, release=names.release))
        return LoraCacheReport(figures=figures)

    def for_model(self, model: str) -> OpenAICompatDeployment:
        return OpenAICompatDeployment(self.url, self.registry, model, self._api_key, self._adapters_as,
                                      self.system_prompt, self.stall_timeout)

    # ---- replies -----------------------------------------------------------------------------------
    def _body(self, request: ReplyRequest) -> dict:
        body: dict[str, object] = {"model": self.listing().base, "messages": messages_body(request, self.system_prompt),
                                   **sampling_fields(request.sampling, request.min_tokens)}
        if request.stop:
            body["stop"] = list(request.stop)
        if request.continues:
            self._continue(body, request.continues)
        if request.adapter:
            self._apply_adapter(body, request.adapter)
        return body

    def _continue(self, body: dict, partial: str) -> None:
        """Ask for the rest of the reply `partial`: vLLM's extras leave the last (assistant) message open in the
        template; trtllm-serve refuses unknown fields, so it gets an explicit user turn asking to go on."""
        messages = [*body["messages"], {"role": "assistant", "content": partial}]
        if self.adapters_as() == "lora_request":
            body["messages"] = [*messages, {"role": "user", "content": CONTINUE_TURN}]
        else:
            body.update(messages=messages, continue_final_message=True, add_generation_prompt=False)

    def _apply_adapter(self, body: dict, adapter: str) -> None:
        if self.adapters_as() == "lora_request":
            check_adapter_name(adapter, self.registry.names())
            body["lora_request"] = {"lora_name": adapter, "lora_int_id": self.registry.task_id(adapter),
                                    "lora_path": str((self.registry.folder / adapter).resolve())}
            return
        known = self.listing().adapters
        if adapter not in known:  # the server may have loaded it since the last listing
            known = self.listing(refresh=True).adapters
        body["model"] = check_adapter_name(adapter, known)

    def open_reply(self, request: ReplyRequest) -> OpenAIStream:
        body = {**self._body(request), "stream": True, "stream_options": {"include_usage": True}}
        return OpenAIStream(self.http, self.url + "/chat/completions", body, self.stall_timeout)

    def describe_images(self, files) -> list[dict] | None:
        """None: an OpenAI-compatible server does not say what its vision tower found."""
        return None

    def check_images(self, files, text: str) -> None:
        check_image_count(len(files))
        for source in files:
            load_image(source)

    def probe(self, adapter: str | None, prompt: str, tokens: int, images: Sequence[bytes] = ()) -> Probe:
        """Greedy first tokens with their top log-probabilities (just the text when the server gives none)."""
        params = SamplingParams(max_tokens=tokens, top_k=1, top_p=0.0, seed=0)
        request = ReplyRequest(Conversation.asking(prompt, images), params, adapter)
        body = {**self._body(request),
                "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        try:
            reply = self.http.post(self.url + "/chat/completions", json=body, timeout=httpx.Timeout(10.0, read=120.0))
        except httpx.HTTPError as exc:
            raise ServerUnreachable(MSG_OPENAI_UNREACHABLE.format(url=self.url, detail=exc)) from None
        if reply.status_code != 200:
            raise http_error(reply.status_code, reply.text, str(body["model"]))
        choice = (reply.json().get("choices") or [{}])[0]
        content = ((choice.get("logprobs") or {}).get("content")) or []
        if not content:
            return Probe(tokens=(str((choice.get("message") or {}).get("content") or "").strip(),))
        return Probe(tokens=tuple(str(c.get("token", "")) for c in content),
                     logprobs=tuple({str(t.get("token")): float(t.get("logprob", 0.0))
                                     for t in c.get("top_logprobs") or [c]} for c in content))

    # ---- adapters ----------------------------------------------------------------------------------
    def sampling_defaults(self) -> dict[str, float]:
        """{}: the OpenAI-compatible server applies its model's defaults itself (vLLM's --generation-config)."""
        return {}

    def adapter_names(self) -> list[str]:
        if self.adapters_as() == "lora_request":
            return [a.name for a in self.registry.list()]
        try:
            return list(self.listing().adapters)
        except ChatError:
            return []

    def adapters(self) -> list[AdapterState]:
        if self.adapters_as() == "lora_request":
            return [AdapterState(name=a.name, held_by_server=None, rank=a.rank, target_modules=a.target_modules,
                                 size_bytes=a.size_bytes, task_id=a.task_id, kind=a.kind, path=a.path)
                    for a in self.registry.list()]
        served = self.adapter_names()
        rows = [AdapterState(name=name, held_by_server=True, kind="served") for name in served]
        rows += [AdapterState(name=name, held_by_server=False, kind="folder only", path=self.registry.folder / name)
                 for name in self.registry.names() if name not in served]
        return rows

    def adapter_problems(self) -> dict[str, str]:
        return self.registry.problems() if self.adapters_as() == "lora_request" else {}

    def register_adapter(self, name: str, path: Path) -> str:
        """Make an adapter just added to the folder usable on the server (a sentence says how it went)."""
        path = Path(path).resolve()
        if self.adapters_as() == "lora_request":
            return MSG_SENT_AS_LORA_REQUEST.format(path=path)
        try:
            reply = self.http.post(self.url + "/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)},
                                   timeout=httpx.Timeout(10.0, read=120.0))
        except httpx.HTTPError as exc:
            raise ServerUnreachable(MSG_OPENAI_UNREACHABLE.format(url=self.url, detail=exc)) from None
        if reply.status_code in (404, 405):
            return MSG_NO_RUNTIME_LOADING.format(detail=f"HTTP {reply.status_code}", name=name)
        if reply.status_code != 200:
            raise http_error(reply.status_code, reply.text, name)
        self.listing(refresh=True)
        return MSG_LOADED_AT_RUNTIME
