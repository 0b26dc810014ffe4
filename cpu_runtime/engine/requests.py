"""Turn a Triton request for `tensorrt_llm` into a GenerationRequest, checking it like the backend does."""

from dataclasses import dataclass, field

import triton_python_backend_utils as pb_utils


class RequestError(ValueError):
    """The request breaks the engine's contract or limits; the text goes back to the client."""


@dataclass
class Limits:
    max_input_len: int
    max_seq_len: int
    vocab_size: int


@dataclass(eq=False)  # compared by identity: queues hold requests that may look alike
class GenerationRequest:
    request_id: str
    input_ids: list
    max_new_tokens: int
    end_id: int = -1
    pad_id: int = 0
    streaming: bool = False
    exclude_input: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    min_length: int = 0
    seed: int = 0
    stop_words: list = field(default_factory=list)
    bad_words: list = field(default_factory=list)
    embedding_bias: object = None
    prompt_table: object = None
    return_context_logits: bool = False
    lora_task_id: int | None = None  # None: the request carries no lora_task_id
    lora_weights: object = None
    lora_config: object = None
    # runtime state
    output_ids: list = field(default_factory=list)
    log_probs: list = field(default_factory=list)
    finished: bool = False
    stop_requested: bool = False
    cache: object = None  # single-request runs (EngineRunner.step) only
    slot: int | None = None  # the batched engine's cache slot while running
    cached: int = 0  # positions of input_ids + output_ids held in the KV cache
    kv: object = None  # kv.KvState while running
    prompt_embeds: object = None  # [prompt, hidden] when the prompt uses a prompt table
    context_parts: list = field(default_factory=list)
    kv_new_blocks: int = 0
    kv_reused_blocks: int = 0
    paused: int = 0  # times paused by max_utilization
    lora_adapter: object = None  # the decoded adapter this request runs with (held in use)
    generator: object = None
    context_logits: object = None
    sender: object = None
    request: object = None
    done: object = None
    final_response: object = None
    wanted: frozenset | None = None  # the response tensors the request asked for (the Triton stub sets it)
    final_sent: bool = False  # set by FinalGate.send_final
    cancel_asked_at: float = float("-inf")  # when FinalGate last asked the client (monotonic seconds)
    arrival_ns: int = 0
    first_scheduled_ns: int = 0
    first_token_ns: int = 0


def _get(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _scalar(request, name, default, cast):
    value = _get(request, name)
    if value is None or value.size == 0:
        return default
    return cast(value.reshape(-1)[0])


def word_list(array):
    """TensorRT-LLM [2, N] word list (ids row, cumulative offsets row) -> list of token sequences."""
    if array is None or array.size == 0:
        return []
    array = array.reshape(-1, 2, array.shape[-1])[0]
    ids, offsets = array[0].tolist(), [o for o in array[1].tolist() if o >= 0]
    words, start = [], 0
    for end in offsets:
        if end > start:
            words.append(ids[start:end])
        start = end
    return words


def parse_request(request, limits, exclude_input_default):
    input_ids = _get(request, "input_ids")
    if input_ids is None:
        raise RequestError("input_ids is required.")
    length = _scalar(request, "input_lengths", None, int)
    flat = input_ids.reshape(-1).tolist()
    if length is None:
        raise RequestError("input_lengths is required.")
    if length <= 0:
        raise RequestError("The prompt is empty (input_lengths is 0).")
    flat = flat[:length]
    if length > limits.max_input_len:
        raise RequestError(f"Prompt length ({length}) exceeds maximum input length ({limits.max_input_len}).")
    max_new = _scalar(request, "request_output_len", None, int)
    if max_new is None or max_new <= 0:
        raise RequestError("request_output_len must be greater than 0.")
    max_new = min(max_new, limits.max_seq_len - length)
    if max_new <= 0:
        raise RequestError(f"Prompt length ({length}) leaves no room under max_seq_len ({limits.max_seq_len}).")
    beam = _scalar(request, "beam_width", 1, int)
    if beam != 1:
        raise RequestError("The CPU engine supports beam_width 1 only.")
    table = _get(request, "prompt_embedding_table")
    gen = GenerationRequest(
        request_id=request.request_id() or "",
        input_ids=flat,
        max_new_tokens=max_new,
        end_id=_scalar(request, "end_id", -1, int),
        pad_id=_scalar(request, "pad_id", 0, int),
        streaming=_scalar(request, "streaming", False, bool),
        exclude_input=_scalar(request, "exclude_input_in_output", exclude_input_default, bool),
        temperature=_scalar(request, "temperature", 1.0, float),
        top_k=_scalar(request, "runtime_top_k", 0, int),
        top_p=_scalar(request, "runtime_top_p", 0.0, float),
        repetition_penalty=_scalar(request, "repetition_penalty", 1.0, float),
        presence_penalty=_scalar(request, "presence_penalty", 0.0, float),
        frequency_penalty=_scalar(request, "frequency_penalty", 0.0, float),
        min_length=_scalar(request, "min_length", 0, int),
        seed=_scalar(request, "random_seed", 0, int),
        stop_words=word_list(_get(request, "stop_words_list")),
        bad_words=word_list(_get(request, "bad_words_list")),
        embedding_bias=_get(request, "embedding_bias"),
        prompt_table=None if table is None or table.size == 0 else table.reshape(-1, table.shape[-1]),
        return_context_logits=_scalar(request, "return_context_logits", False, bool),
        lora_task_id=_scalar(request, "lora_task_id", None, int),
        lora_weights=_get(request, "lora_weights"),
        lora_config=_get(request, "lora_config"),
    )
    if gen.temperature <= 0:
        raise RequestError("temperature must be greater than 0.")
    if not 0.0 <= gen.top_p <= 1.0:
        raise RequestError("top_p must be between 0 and 1.")
    if gen.top_k < 0:
        raise RequestError("top_k cannot be negative.")
    if gen.repetition_penalty <= 0:
        raise RequestError("repetition_penalty must be greater than 0.")
    too_big = [i for i in flat if i < 0 or (i >= limits.vocab_size and gen.prompt_table is None)]
    if too_big:
        raise RequestError(f"Token id {too_big[0]} is outside the vocabulary (size {limits.vocab_size}).")
    if gen.embedding_bias is not None and gen.embedding_bias.size == 0:
        gen.embedding_bias = None
    return gen
