"""The deployment interface every surface uses, and the values that cross it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from app.adapters.audit import AdapterAudit, LoraTarget
from app.adapters.cache_watch import CacheView
from app.adapters.intake import AdapterError
from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams
from app.core.streams import StreamDefaults
from app.deployments.messages import MSG_NO_LORA_FIGURES, MSG_UNKNOWN_ADAPTER

__all__ = ["AdapterState", "Deployment", "DeploymentDefaults", "DeploymentStatus", "LoraCacheReport", "PlainAdapters",
           "Probe", "ReplyRequest", "ReplyStream", "SamplingParams", "ServerLoraFigures", "StreamDefaults",
           "check_adapter_name"]


@dataclass(frozen=True)
class ReplyRequest:
    """One reply to open: the turns the model is sent (the last is the person's message; the images sent are
    the ones on the person's trailing message), settings, adapter (None = base model).

    `continues`: the start of the assistant reply to this turn that the model goes on with (Continue after a
    reply cut at max_tokens); the stream then yields only the new text. Empty: a new reply.
    """

    conversation: Conversation
    sampling: SamplingParams = field(default_factory=SamplingParams)
    adapter: str | None = None
    system_prompt: str | None = None
    stop: Sequence[str] = ()
    min_tokens: int = 0
    logprobs: bool = False  # ask the server for the generated tokens' log-probabilities (the adapter probe)
    continues: str = ""


@dataclass(frozen=True)
class ServerLoraFigures:
    """What a server's own metrics say of its adapters (vLLM's vllm:lora_requests_info), as read now."""

    source: str  # the metric and the release its name was read at, e.g. "vllm:lora_requests_info (vLLM 0.32.0)"
    running: tuple[str, ...]  # adapters of the requests running in the newest state
    waiting: tuple[str, ...]  # adapters of the requests waiting in it
    recent: tuple[str, ...]  # adapters running or waiting in any state of the last `recent_seconds`
    recent_seconds: float
    max_loras: int | None  # adapters a batch may use at once (vLLM's --max-loras)
    age_seconds: float | None  # how long ago the newest state was set, by the server's clock
    states: int  # states the server keeps (one per running/waiting set seen since it started)

    @property
    def in_use(self) -> tuple[str, ...]:
        """The adapters of the requests in flight now, running or waiting (vLLM 0.32 names the same in both)."""
        return tuple(dict.fromkeys(self.running + self.waiting))


@dataclass(frozen=True)
class LoraCacheReport:
    """The Server tab's adapter-cache section for a deployment: the app's own record of the server's cache (the
    engine topology: weights sent and evictions seen), the server's own LoRA figures, or `note`: why there are none."""

    seen: CacheView | None = None
    figures: ServerLoraFigures | None = None
    note: str = ""


class DeploymentDefaults:
    """The defaults of what a deployment declares about its model, for the kinds that declare nothing (every
    deployment class inherits them; `Deployment` says what they mean)."""

    family: str | None = None
    registry: AdapterRegistry | None = None  # the adapters folder (every kind here sets its own)

    def takes_video(self) -> bool:
        return False

    def batch_size(self) -> int | None:
        return None

    def warm_up(self) -> None:
        """Nothing to load ahead of the first reply."""

    def lora_target(self) -> LoraTarget:
        """What the deployment applies of an adapter: every server here applies LoRA to the language model only;
        a kind that knows its limits (the engine topology: its engine's config.json) says more."""
        return LoraTarget(server=self.kind)

    def lora_cache(self) -> LoraCacheReport:
        """What the Server tab can say of the server's adapter cache: here, that it says nothing."""
        return LoraCacheReport(note=MSG_NO_LORA_FIGURES.format(server=self.kind))

    def adapter_audit(self, name: str) -> AdapterAudit | None:
        """What lora_target() applies of adapter `name` of the adapters folder (None: not there or unreadable)."""
        if self.registry is None:
            return None
        try:
            return self.registry.audit(name, self.lora_target())
        except AdapterError:
            return None


class PlainAdapters:
    """The adapter answers of a deployment whose model has no adapter of its own (the engine topology overrides
    them for families that have one): none is built in, any listed adapter can be picked, a text probe shows one."""

    def built_in_adapter(self) -> str | None:
        return None

    def combines_adapters(self) -> bool:
        return True

    def probe_needs_image(self) -> bool:
        return False


@runtime_checkable
class ReplyStream(Protocol):
    """A streamed reply: iterate for text deltas; `cancel()` stops it on the server.

    Every attribute the rooms read is declared here, and read plainly (no getattr probes, `make lint` checks it);
    the defaults for a kind with nothing to say live in one place, app.core.streams.StreamDefaults, which every
    stream class inherits (wrappers hand them on through app.core.streams.ForwardedStream).
    """

    text: str
    cancelled: bool

    def __iter__(self) -> Iterator[str]: ...
    def __next__(self) -> str: ...
    def cancel(self) -> None: ...

    @property
    def chunks(self) -> int:
        """Pieces of text received (about one per token when streaming)."""

    @property
    def time_to_first_token(self) -> float | None: ...

    @property
    def finish_reason(self) -> str | None:
        """Why the reply ended: "length" (it reached max_tokens), "stop" (end of turn or a stop word), None
        while streaming and when unknown or cancelled."""

    lora_bytes_sent: int  # bytes of LoRA inputs the request sent (task id, weights, config); 0 without an adapter
    weights_sent: bool  # the request carried the adapter's weights (else the task id alone, or no adapter)
    adapter: str | None  # the adapter the request carried, where the stream knows it (the model's own one too)
    whole_reply: bool  # the server sent the reply at once (the runner topology): no token count to show
    image_report: Callable[[], list[dict] | None] | None  # what the image encoder found ("What the model saw")
    notes: tuple[str, ...]  # what the request sent differently from what was asked, and why (() when nothing)
    reads_on_loop: bool  # read on an event loop: await ready() before each next(), which then never waits

    def details_line(self) -> str:
        """The kind's own figures line (the runner's finish and reply mode, llmapi's KV cache); "" when none."""

    async def ready(self) -> None:
        """For a stream that reads on the loop: return once next() can go on without waiting."""


@dataclass(frozen=True)
class DeploymentStatus:
    """Readiness as a status line shows it."""

    live: bool
    ready: bool
    server: str = ""  # e.g. "Triton 2.55.0" or "OpenAI-compatible server"
    detail: str = ""


@dataclass(frozen=True)
class AdapterState:
    """One adapter as the Adapters tab lists it; None where the deployment does not know."""

    name: str
    held_by_server: bool | None
    rank: int | None = None
    target_modules: tuple[str, ...] = ()
    size_bytes: int | None = None
    task_id: int | None = None
    kind: str = ""
    path: Path | None = None


@dataclass(frozen=True)
class Probe:
    """The first tokens of a greedy reply to a probe prompt (or its text as one item), with log-probabilities
    where the server returns them."""

    tokens: tuple[str, ...]
    logprobs: tuple[dict[str, float], ...] | None = None  # per position: token -> logprob (top few)
    # the greedy tokens' own log-probabilities as the server returns them: one per token (the engine topology)
    # or the running sum after each response (the llmapi model's cumulative_logprob)
    chosen_logprobs: tuple[float, ...] | None = None

    @property
    def text(self) -> str:
        return "".join(self.tokens)


class Deployment(Protocol):
    """A served model and its adapters, whatever the server kind. Every attribute the rooms read is declared here
    and read plainly; what a kind need not declare has its default in `DeploymentDefaults`, which every
    deployment class inherits."""

    kind: str  # short name for messages, e.g. "Triton engine topology"
    registry: AdapterRegistry | None  # the adapters folder the deployment sends or registers adapters from
    url: str
    model: str
    family: str | None  # the multimodal family the served model names (the runner topology); None or "": none

    def takes_video(self) -> bool:
        """Whether the served model declares a video input (the runner topology's `takes_video`)."""
    def warm_up(self) -> None:
        """Load what the first reply would otherwise wait for (the engine kinds: the tokenizer of the prompt
        template, two seconds on a small machine); called once on a thread of its own as the app starts. A failure
        is left for the first reply to report."""
    def batch_size(self) -> int | None:
        """How many requests the served model batches (its Triton max_batch_size, the engine model's for the
        engine topology); None when the server does not say or cannot be asked now."""
    def lora_target(self) -> LoraTarget:
        """What the deployment applies of an adapter (the audit's target, setup/lora/audit.py)."""
    def adapter_audit(self, name: str) -> AdapterAudit | None:
        """The audit of an adapter of the folder against lora_target(); None when it cannot be read."""
    def lora_cache(self) -> LoraCacheReport:
        """The server's adapter cache for the Server tab: as the app saw it, as the server's metrics say, or why
        neither can be shown."""

    def status(self) -> DeploymentStatus: ...
    def open_reply(self, request: ReplyRequest) -> ReplyStream: ...
    def check_images(self, files: Sequence[str | bytes], text: str) -> None: ...
    def describe_images(self, files: Sequence[str | bytes]) -> list[dict] | None:
        """What the image encoder finds in `files` ("What the model saw"); None when it cannot say."""
    def adapter_names(self) -> list[str]: ...
    def built_in_adapter(self) -> str | None:
        """The adapter that is part of the served model and on for every reply (None: there is none)."""
    def combines_adapters(self) -> bool:
        """Whether a reply can take an adapter besides the model's own one (True when the model has none)."""
    def adapters(self) -> list[AdapterState]: ...
    def adapter_problems(self) -> dict[str, str]: ...
    def register_adapter(self, name: str, path: Path) -> str: ...
    def probe(self, adapter: str | None, prompt: str, tokens: int, images: Sequence[bytes] = ()) -> Probe:
        """Greedy first tokens of `prompt` (with `images`) through `adapter` (None: the base model)."""
    def probe_needs_image(self) -> bool:
        """Whether a probe must show a picture: the model answers only about one, or its adapters act only at
        image rows (a Partial LoRA)."""
    def sampling_defaults(self) -> dict[str, float]:
        """The served model's own sampling defaults (its generation_config.json) for API requests that leave
        them out; {} when it has none or the server applies its own."""
    def metrics_url(self) -> str | None: ...
    def for_model(self, model: str) -> Deployment: ...
    def observe(self, status: DeploymentStatus) -> None: ...


def check_adapter_name(adapter: str | None, known: Sequence[str]) -> str | None:
    """The one rule for an adapter a caller names: None or "" is the base model (None); a name among `known` is
    itself; any other name is InvalidRequest "There is no adapter named ..." listing `known`."""
    if not adapter:
        return None
    if adapter not in known:
        raise InvalidRequest(MSG_UNKNOWN_ADAPTER.format(adapter=adapter, known=", ".join(known) or "none"))
    return adapter
