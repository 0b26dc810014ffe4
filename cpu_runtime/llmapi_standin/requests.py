"""An llmapi request's inputs -> the engine core's GenerationRequest, checked as the LLM API checks them.

`get(name)` returns an input as a numpy array or None; no Triton import, so tests use it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cpu_runtime.llmapi_standin.messages import (
    MSG_BEAMS,
    MSG_EMPTY,
    MSG_MISSING_TEXT,
    MSG_NO_ROOM,
    MSG_NOT_1D,
    MSG_NOT_SCALAR,
    MSG_RANGE,
    MSG_TOO_LONG,
)

SAMPLING = ("best_of", "beam_width", "temperature", "top_k", "top_p", "frequency_penalty", "presence_penalty",
            "max_tokens", "seed", "exclude_input_from_output", "return_perf_metrics")
RETURNS = ("return_finish_reason", "return_stop_reason", "return_cumulative_logprob")
LORA = ("lora_id", "lora_name", "lora_path", "lora_ckpt_source")
DEFAULT_MAX_TOKENS = 32  # the LLM API's SamplingParams default



def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def scalar(get, name):
    array = get(name)
    if array is None:
        return None
    if array.size != 1:
        raise ValueError(MSG_NOT_SCALAR.format(name=name))
    value = array.reshape(-1)[0]
    return _text(value) if isinstance(value, bytes | str) else value.item()


def strings(get, name) -> list[str]:
    array = get(name)
    return [] if array is None else [_text(v) for v in array.reshape(-1).tolist()]


@dataclass
class LlmApiRequest:
    """What one llmapi request asks for, before tokenizing."""

    prompt: str
    streaming: bool = False
    sampling: dict = field(default_factory=dict)
    stop: list = field(default_factory=list)
    returns: dict = field(default_factory=dict)
    lora: dict = field(default_factory=dict)
    image_urls: list = field(default_factory=list)


def read_request(get) -> LlmApiRequest:
    """The request's values (ValueError with upstream's text where upstream has one)."""
    text = get("text_input")
    if text is None:
        raise ValueError(MSG_MISSING_TEXT)
    if text.ndim > 1 and text.size != 1:
        raise ValueError(MSG_NOT_1D)
    sampling = {name: scalar(get, f"sampling_param_{name}") for name in SAMPLING}
    return LlmApiRequest(
        prompt=_text(text.reshape(-1)[0]), streaming=bool(scalar(get, "streaming") or False),
        sampling={k: v for k, v in sampling.items() if v is not None}, stop=strings(get, "sampling_param_stop"),
        returns={name: bool(scalar(get, name) or False) for name in RETURNS},
        lora={name: scalar(get, name) for name in LORA}, image_urls=strings(get, "image_url"))


def check_sampling(sampling: dict) -> None:
    beams = int(sampling.get("best_of", sampling.get("beam_width", 1)) or 1)
    if beams != 1:
        raise ValueError(MSG_BEAMS.format(value=beams))
    rules = (("temperature", lambda v: v >= 0, "at least 0"), ("top_p", lambda v: 0 <= v <= 1, "between 0 and 1"),
             ("top_k", lambda v: v >= 0, "at least 0"), ("max_tokens", lambda v: v >= 1, "at least 1"))
    for name, ok, rule in rules:
        if name in sampling and not ok(sampling[name]):
            raise ValueError(MSG_RANGE.format(name=name, rule=rule, value=sampling[name]))


def generation_request(gen_type, request: LlmApiRequest, ids: list[int], limits, end_id: int, request_id: str):
    """The engine core's request for `ids` with the request's sampling (temperature 0 is greedy)."""
    if not ids:
        raise ValueError(MSG_EMPTY)
    if len(ids) > limits.max_input_len:
        raise ValueError(MSG_TOO_LONG.format(tokens=len(ids), limit=limits.max_input_len))
    room = limits.max_seq_len - len(ids)
    if room <= 0:
        raise ValueError(MSG_NO_ROOM.format(tokens=len(ids), limit=limits.max_seq_len))
    s = request.sampling
    check_sampling(s)
    temperature = float(s.get("temperature", 1.0))
    greedy = temperature == 0.0
    return gen_type(
        request_id=request_id, input_ids=list(ids), max_new_tokens=min(int(s.get("max_tokens", DEFAULT_MAX_TOKENS)), room),
        end_id=end_id, streaming=request.streaming, exclude_input=True,
        temperature=1.0 if greedy else temperature, top_k=1 if greedy else int(s.get("top_k", 0)),
        top_p=0.0 if greedy else float(s.get("top_p", 0.0)),
        presence_penalty=float(s.get("presence_penalty", 0.0)), frequency_penalty=float(s.get("frequency_penalty", 0.0)),
        seed=int(s.get("seed", 0)))
