"""A streaming request with a LoRA adapter that keeps the server's LoRA cache in step.

The first request with an adapter sends task id + weights + config, later ones the id alone. When the
server answers that the task is not in its cache (evicted, or the server restarted) before any text was
shown, the weights are sent again and the request retried once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Protocol

import numpy as np

from app.adapters.cache_watch import HIT, MISS, RESENT, SENT
from app.core.errors import ChatError, LoraCacheFull, LoraNotInCache, ServerUnreachable
from app.core.streams import StreamDefaults


class AdapterBook(Protocol):
    """What a stream needs of the adapter registry (app.adapters.registry.AdapterRegistry)."""

    def task_id(self, name: str) -> int: ...
    def extra_inputs(self, name: str, first_use: bool, modules: frozenset[str] | None) -> Mapping[str, object]: ...
    def forget_server_state(self) -> None: ...
    def mark_not_held(self, task_id: int) -> None: ...
    def mark_held(self, task_id: int) -> None: ...
    def saw_cache(self, event: str, name: str, task_id: int) -> None: ...


LORA_INPUTS = ("lora_task_id", "lora_weights", "lora_config")


def lora_bytes(inputs: Mapping[str, object]) -> int:
    """Bytes the LoRA inputs of a request put on the wire (task id, weights, config)."""
    total = 0
    for name in LORA_INPUTS:
        value = inputs.get(name)
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif value is not None:
            total += 8
    return total


class AdapterStream(StreamDefaults):
    """A streaming request with an adapter; iterate it for text deltas like `TokenStream`.

    The first attempt sends the weights unless the server is known to hold them. If the server
    answers that the task is not in its cache before any text arrived, the weights are sent again
    once. `lora_bytes_sent` counts the LoRA bytes of all attempts.

    `image_report`, when the deployment sets it, returns what the image encoder found in this
    request's images ("What the model saw"), or None.
    """

    def __init__(self, registry: AdapterBook, client, adapter: str | None, prompt: str, params,
                 extra: Mapping[str, object] | None = None, modules: frozenset[str] | None = None):
        self.registry = registry
        self.adapter = adapter or None
        self.task_id = registry.task_id(self.adapter) if self.adapter else None
        self.started_at = time.monotonic()
        self.first_token_at: float | None = None
        self.lora_bytes_sent = 0
        self.weights_sent = False
        self.retried = False
        self._client, self._prompt, self._params, self._extra = client, prompt, params, dict(extra or {})
        self._stream = None
        self._modules = modules  # the rows the deployment applies (None: all)
        self._start(first_use=None)

    def _start(self, first_use: bool | None) -> None:
        inputs = self.registry.extra_inputs(self.adapter, first_use, self._modules) if self.adapter else {}
        self._sent_weights_now = "lora_weights" in inputs
        self._event = (RESENT if self.retried else SENT) if self._sent_weights_now else HIT
        self.weights_sent |= self._sent_weights_now
        self.lora_bytes_sent += lora_bytes(inputs)
        try:
            self._stream = self._client.stream(self._prompt, self._params, {**self._extra, **inputs})
        except ChatError as exc:
            self._stream = None
            self._failed(exc)

    def _failed(self, exc: ChatError) -> None:
        """Retry once on 'not in cache' before any text; otherwise re-raise."""
        if isinstance(exc, ServerUnreachable):
            self.registry.forget_server_state()
        if self.task_id is not None and isinstance(exc, LoraNotInCache | LoraCacheFull):
            self.registry.mark_not_held(self.task_id)
            if isinstance(exc, LoraNotInCache):
                self.registry.saw_cache(MISS, self.adapter, self.task_id)
            shown = self._stream is not None and bool(self._stream.text)
            if isinstance(exc, LoraNotInCache) and not self.retried and not shown and not self._sent_weights_now:
                self.retried = True
                self._start(first_use=True)
                return
        raise exc

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            try:
                delta = next(self._stream)
            except StopIteration:
                self._succeeded()
                raise
            except ChatError as exc:
                self._failed(exc)  # either raises or has started the retry
                continue
            if not delta:  # read on the loop and nothing has come yet (TokenStream gives "" only then)
                return delta
            self._succeeded()
            if delta and self.first_token_at is None:
                self.first_token_at = time.monotonic()
            return delta

    def _succeeded(self) -> None:
        if self.task_id is not None and not self._stream.cancelled:
            self.registry.mark_held(self.task_id)
            if self._event:  # once per attempt: the first answer shows the server took the request
                self.registry.saw_cache(self._event, self.adapter, self.task_id)
                self._event = ""

    def cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel()

    @property
    def reads_on_loop(self) -> bool:
        return self._stream is not None and self._stream.reads_on_loop

    async def ready(self) -> None:
        if self._stream is not None:  # the current attempt's (a retry reads in the same way as the first)
            await self._stream.ready()

    @property
    def text(self) -> str:
        return self._stream.text if self._stream is not None else ""

    @property
    def cancelled(self) -> bool:
        return self._stream is not None and self._stream.cancelled

    @property
    def finish_reason(self) -> str | None:
        """"length", "stop", or None (unknown, cancelled), as the underlying stream says."""
        return self._stream.finish_reason if self._stream is not None else None

    @property
    def request_id(self) -> str:
        return self._stream.request_id if self._stream is not None else ""

    @property
    def chunks(self) -> int:
        """Responses that carried new text (one per generated token when streaming)."""
        return self._stream.chunks if self._stream is not None else 0

    @property
    def logprob_trace(self) -> list[float]:
        """The log-probabilities the server returned with this request's responses (see TokenStream)."""
        return self._stream.logprob_trace if self._stream is not None else []

    @property
    def responses(self) -> int:
        return self._stream.responses if self._stream is not None else 0

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the first attempt's start to the first text (includes a retry)."""
        return None if self.first_token_at is None else self.first_token_at - self.started_at
