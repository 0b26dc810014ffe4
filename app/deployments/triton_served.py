"""What every deployment served by Triton shares: the client's address and model, readiness from Triton's
health and the model's, Triton's metrics, telling the adapter registry when the server went away, and the
adapter probe: greedy first tokens with their log-probabilities where the served model declares the input that
asks for them (the engine topology's `return_log_probs`, the llmapi model's `return_cumulative_logprob`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.deployments.base import DeploymentDefaults, DeploymentStatus, PlainAdapters, Probe, ReplyRequest
from app.deployments.generation_defaults import read_generation_defaults
from app.triton.client import TritonChatClient
from app.triton.metrics import metrics_url_for


class TritonServed(PlainAdapters, DeploymentDefaults):
    """Base of the Triton deployment kinds; `server_note` tells them apart in the status line."""

    client: TritonChatClient
    server_note = ""
    logprobs_input = ""  # the input that asks for log-probabilities ("": the kind has none)

    @property
    def url(self) -> str:
        return self.client.url

    @property
    def model(self) -> str:
        return self.client.model

    def status(self) -> DeploymentStatus:
        status = self.client.status()
        return DeploymentStatus(live=status.live, ready=status.model_ready,
                                server=f"Triton {status.version}{self.server_note}", detail=status.detail)

    def observe(self, status: DeploymentStatus) -> None:
        self.registry.observe_server(status.live)

    def metrics_url(self) -> str | None:
        return self._metrics or metrics_url_for(self.client.url)

    def batch_model(self) -> str:
        """The model whose max_batch_size is the served batch (the chat model itself unless a kind says)."""
        return self.client.model

    def batch_size(self) -> int | None:
        """The batch model's max_batch_size from its Triton config; None when 0 (no batching dimension), absent
        or the server cannot be asked."""
        try:
            value = self.client.model_config(self.batch_model()).get("max_batch_size")
        except ChatError:
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    _sampling_defaults: dict[str, float] | None = None

    def model_folder(self) -> str | None:
        """The served model's folder on this host (where its generation_config.json is); None when unknown."""
        return None

    def sampling_defaults(self) -> dict[str, float]:
        """The model folder's generation_config.json sampling fields, read once (not while the server cannot
        say where its folder is)."""
        if self._sampling_defaults is None:
            try:
                folder = self.model_folder()
            except ChatError:
                return {}
            self._sampling_defaults = read_generation_defaults(folder)
        return self._sampling_defaults

    def describe_images(self, files) -> list[dict] | None:
        """None: only the engine topology's image encoder can say what it found."""
        return None

    def returns_logprobs(self) -> bool:
        """Whether the served model declares the input that asks for log-probabilities."""
        return bool(self.logprobs_input) and self.client.model_info().resolve(self.logprobs_input) is not None

    def probe(self, adapter: str | None, prompt: str, tokens: int, images: Sequence[bytes] = ()) -> Probe:
        """Greedy first tokens of `prompt` (about `images`, when given) with `adapter` (None: the base model), with
        their log-probabilities where the model returns them."""
        asks = self.returns_logprobs()
        params = replace(SamplingParams(), max_tokens=tokens, top_k=1, top_p=0.0, seed=0)
        stream = self.open_reply(ReplyRequest(Conversation.asking(prompt, images), params, adapter,
                                              logprobs=asks))
        try:
            for _ in stream:
                pass
        finally:
            stream.cancel()
        return probe_of(stream.text, stream.logprob_trace if asks else ())


def probe_of(text: str, trace: Sequence[float]) -> Probe:
    """A probe from a greedy reply's text and the log-probabilities its responses carried. A trace with a value
    that is not a finite number, or of zeros only (what a server sends for values it did not compute), is not
    compared (None): equal placeholders must not pass for equal log-probabilities."""
    values = tuple(float(v) for v in trace)
    usable = bool(values) and all(math.isfinite(v) for v in values) and any(v != 0.0 for v in values)
    return Probe(tokens=(text.strip(),), chosen_logprobs=values if usable else None)
