"""A reply from Triton's `llmapi` model: a stream that keeps the outputs beside text_output (finish reason,
KV-cache and timing figures), and Stop as the model's `stop` request.

text_output holds all text so far (the LLM API's output.text).
"""

from __future__ import annotations

from dataclasses import replace

from app.core.errors import ChatError, InvalidRequest
from app.deployments.messages import MSG_LLMAPI_UNSEEN
from app.triton.client import ModelInfo, TokenStream, send_control_request
from app.triton.declared_inputs import tensor

DETAIL_OUTPUTS = ("finish_reason", "stop_reason", "cumulative_logprob", "kv_cache_reused_block",
                  "kv_cache_missed_block", "kv_cache_alloc_new_blocks", "kv_cache_alloc_total_blocks",
                  "kv_cache_hit_rate", "arrival_time_ns", "first_scheduled_time_ns", "first_token_time_ns",
                  "last_token_time_ns")
UNSEEN_PATH = "lora_path does not exist on the Triton server's filesystem: "
CANCELLED_REPLY = "Request cancelled by client"  # what the model answers a `stop` request with


def _plain(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value.item() if hasattr(value, "item") else value


def cumulative_logprob(result) -> list[float]:
    """The response's `cumulative_logprob` as a one-item list; [] when it carries none."""
    value = result.as_numpy("cumulative_logprob")
    return [float(value.reshape(-1)[0])] if value is not None and value.size else []


def details_line(details: dict) -> str:
    """What the server said about a reply, in one line: 'finished: stop · KV cache: 3 blocks, 2 reused (67%) ·
    queued 0.4 ms'; empty when it said nothing."""
    parts = []
    reason = details.get("finish_reason")
    if reason not in (None, "None"):
        parts.append(f"finished: {reason}")
    total = details.get("kv_cache_alloc_total_blocks")
    if total is not None:
        reused = int(details.get("kv_cache_reused_block") or 0)
        rate = float(details.get("kv_cache_hit_rate") or 0.0)
        parts.append(f"KV cache: {int(total)} blocks, {reused} reused ({rate:.0%})")
    arrival, scheduled = details.get("arrival_time_ns"), details.get("first_scheduled_time_ns")
    if arrival and scheduled:
        parts.append(f"queued {(int(scheduled) - int(arrival)) / 1e6:.1f} ms")
    return " · ".join(parts)


class LlmApiStream(TokenStream):
    """A streamed llmapi reply; `details` holds the latest finish reason and figures the server returned."""

    def __init__(self, url: str, info: ModelInfo, inputs: list, stall_timeout: float, adapter_path: str | None):
        self.details: dict[str, object] = {}
        self._declares_stop = "stop" in info.inputs
        self._model = info.name
        self._adapter_path = adapter_path
        super().__init__(url, replace(info, accumulated_text=True, engine_model=None), inputs, stall_timeout)

    def _observe(self, result) -> None:
        for name in DETAIL_OUTPUTS:
            value = result.as_numpy(name)
            if value is not None and value.size:
                self.details[name] = _plain(value.reshape(-1)[0])

    def _logprobs(self, result) -> list[float]:
        """The running sum of the generated tokens' log-probabilities (`cumulative_logprob`), when returned."""
        return cumulative_logprob(result)

    def details_line(self) -> str:
        return details_line(self.details)

    @property
    def finish_reason(self) -> str | None:
        """The server's finish_reason output ("length", "stop"); None while streaming or after a cancel."""
        reason = self.details.get("finish_reason")
        return None if self.cancelled or reason in (None, "None", "cancelled") else str(reason)

    def __next__(self) -> str:
        try:
            return super().__next__()
        except ChatError as exc:
            if UNSEEN_PATH in str(exc):
                path = str(exc).split(UNSEEN_PATH, 1)[1].strip().rstrip(".")
                raise InvalidRequest(MSG_LLMAPI_UNSEEN.format(adapter=self._adapter_name(path), path=path)) from None
            raise

    @staticmethod
    def _adapter_name(path: str) -> str:
        return path.rstrip("/").rsplit("/", 1)[-1]

    def cancel(self) -> None:
        """Close the call (Triton tells the model) and, where the model declares `stop`, send the stop request."""
        first = not (self._closed or self.cancelled)
        super().cancel()
        if first and self._declares_stop:
            send_llmapi_stop(self._url, self._model, self.request_id)


def send_llmapi_stop(url: str, model: str, request_id: str, timeout: float = 5.0) -> bool:
    """The llmapi model's `stop` request for `request_id`; True when the model answered it."""
    inputs = [tensor("text_input", "", "TYPE_STRING"), tensor("stop", True, "TYPE_BOOL")]
    return send_control_request(url, model, inputs, request_id,
                                lambda error: error is None or CANCELLED_REPLY in str(error), timeout)
