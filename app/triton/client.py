"""Streaming chat client for a Triton TensorRT-LLM deployment (ensemble or tensorrt_llm_bls).

The client reads the deployed model's config from the server and sends only the inputs that model
declares, in the declared data types, so one client serves several backend versions (for example
`random_seed` before 1.0 and `seed` after). Streams are cancelled on the server, not just dropped.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc._infer_result import InferResult
from tritonclient.utils import InferenceServerException

from app.core.constants import DEFAULT_MODEL, SERVER_CHECK_TIMEOUT, STREAM_STALL_SECONDS
from app.core.errors import (
    Cancelled,
    ChatError,
    InvalidRequest,
    ModelNotReady,
    ServerUnreachable,
    StreamStalled,
    parse_error,
)
from app.core.messages import MSG_INVALID_TEXT
from app.core.sampling import SamplingParams
from app.core.streams import StreamDefaults
from app.triton import transport as grpc_stream
from app.triton.describe import can_describe, describe_pixels, encoder_name
from app.triton.textstream import IncrementalText, StopWordTrim

NUMPY_TYPES = {
    "TYPE_BOOL": np.bool_, "TYPE_UINT8": np.uint8, "TYPE_INT32": np.int32, "TYPE_INT64": np.int64,
    "TYPE_UINT64": np.uint64, "TYPE_FP16": np.float16, "TYPE_FP32": np.float32, "TYPE_STRING": np.object_,
}
# Names an input has had across backend versions; the first one the model declares is used.
ALIASES = {"random_seed": ("random_seed", "seed"), "min_length": ("min_length", "min_tokens")}
# The outputs a chat stream reads (TokenStream: the text, and the log-probabilities for logprobs and the adapter
# probe). Only these are asked for: Triton's ensemble answers once every requested output has data, and asking for
# none means all of them, so an output the engine of that release never makes would hold every reply (#47 item 11).
READ_OUTPUTS = ("text_output", "output_log_probs")


def sampling_inputs(params: SamplingParams) -> dict[str, object]:
    """The sampling settings as the backend's input tensors (random_seed is renamed per release, see ALIASES)."""
    return {
        "max_tokens": int(params.max_tokens), "temperature": float(params.temperature),
        "top_k": int(params.top_k), "top_p": float(params.top_p),
        "repetition_penalty": float(params.repetition_penalty), "random_seed": int(params.seed),
        "presence_penalty": float(params.presence_penalty), "frequency_penalty": float(params.frequency_penalty),
    }


def output_logprobs(result) -> list[float]:
    """The log-probabilities one response carries for its new tokens (`output_log_probs`); [] when none."""
    values = result.as_numpy("output_log_probs")
    return [] if values is None else [float(v) for v in values.reshape(-1)]


@dataclass(frozen=True)
class ModelInfo:
    """What the client needs to know about a deployed model, read from its config."""

    name: str
    inputs: Mapping[str, tuple[str, tuple[int, ...]]]
    decoupled: bool
    accumulated_text: bool
    parameters: Mapping[str, str] = field(default_factory=dict)
    engine_model: str | None = None  # for an ensemble: the step that takes a `stop` request
    outputs: frozenset[str] = frozenset()  # the outputs the model declares

    @classmethod
    def from_config(cls, config: dict) -> ModelInfo:
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        inputs = {i["name"]: (i["data_type"], tuple(int(d) for d in i.get("dims", []))) for i in config.get("input", [])}
        steps = config.get("ensemble_scheduling", {}).get("step", [])
        return cls(
            name=config["name"],
            inputs=inputs,
            decoupled=bool(config.get("model_transaction_policy", {}).get("decoupled", False)),
            accumulated_text=params.get("accumulate_tokens", "").lower() in ("true", "1"),
            parameters=params,
            engine_model=next((step["model_name"] for step in steps if step["model_name"] == "tensorrt_llm"), None),
            outputs=frozenset(o["name"] for o in config.get("output", [])),
        )

    def requested_outputs(self, read: Sequence[str] = READ_OUTPUTS) -> list[str] | None:
        """The outputs of `read` this model declares, to ask for by name (None when its config lists no outputs:
        then the request names none and gets all)."""
        return [name for name in read if name in self.outputs] if self.outputs else None

    def resolve(self, name: str) -> str | None:
        """The input name this model uses for `name`, or None when it has no such input."""
        for candidate in ALIASES.get(name, (name,)):
            if candidate in self.inputs:
                return candidate
        return None


@dataclass(frozen=True)
class ServerStatus:
    live: bool
    model_ready: bool
    version: str = ""
    detail: str = ""


def _utf8(name: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates (e.g. "\ud800" in JSON) have no UTF-8 form
        field = "message" if name == "text_input" else name.replace("_", " ")
        raise InvalidRequest(MSG_INVALID_TEXT.format(field=field, position=exc.start)) from None


def _tensor(name: str, value: object, data_type: str) -> grpcclient.InferInput:
    dtype = NUMPY_TYPES.get(data_type)
    if dtype is None:
        raise InvalidRequest(f"Input {name} has a data type this client cannot send ({data_type}).")
    if isinstance(value, np.ndarray):
        array = value.astype(dtype, copy=False)
    elif dtype is np.object_:
        items = value if isinstance(value, list | tuple) else [value]
        array = np.array([[_utf8(name, v) if isinstance(v, str) else v for v in items]], dtype=np.object_)
    else:
        array = np.array([[value]], dtype=dtype)
    tensor = grpcclient.InferInput(name, list(array.shape), data_type.removeprefix("TYPE_").replace("STRING", "BYTES"))
    tensor.set_data_from_numpy(array)
    return tensor


class TokenStream(StreamDefaults):
    """One streaming request: iterate for text deltas; `cancel()` stops it on the server.

    Responses are read from gRPC by the iterating thread itself (app.triton.transport), or on the event loop
    where transport.LOOP_READS names one (then `reads_on_loop`: await `ready()` before each next()); a watchdog
    cancels the call when nothing arrives for `stall_timeout` seconds, and iteration then raises
    StreamStalled. `outputs` names the outputs asked for (TritonChatClient.stream: those of READ_OUTPUTS the model
    declares); None asks for all, which subclasses that read outputs of their own keep.
    """

    def __init__(self, url: str, info: ModelInfo, inputs: list, stall_timeout: float,
                 stop_words: Sequence[str] = (), max_tokens: int | None = None, outputs: Sequence[str] | None = None):
        self._url = url
        self._max_tokens = max_tokens
        self._finish_reason: str | None = None
        self.tokens = 0  # responses that carried a text_output (one per generated token when streaming)
        self._engine_model = info.engine_model
        self.request_id = f"chat-{uuid.uuid4().hex[:16]}"
        self.text = ""
        self.first_token_at: float | None = None
        self.started_at = time.monotonic()
        self.responses = 0
        self.chunks = 0  # responses that carried new text: one per generated token when streaming
        self.logprob_trace: list[float] = []  # log-probabilities the responses carried, in order
        self.cancelled = False
        self.stall_timeout = stall_timeout
        self._stalled = False
        self._last = self.started_at
        self._assembler = IncrementalText(accumulated=info.accumulated_text)
        self._trim = StopWordTrim(stop_words)
        self._lock = threading.Lock()
        self._closed = False
        self._done = threading.Event()
        self._responses = None
        try:
            requested = None if outputs is None else [grpcclient.InferRequestedOutput(n) for n in outputs]
            self._responses = grpc_stream.open_stream(url, info.name, inputs, self.request_id, self._done, requested)
        except grpc.RpcError as exc:
            self._close(cancel=True)
            raise self._error(exc) from None
        self.reads_on_loop = isinstance(self._responses, grpc_stream.LoopResponses)
        grpc_stream.WATCHDOG.watch(self)

    async def ready(self) -> None:
        """Read on the loop (transport.LOOP_READS): return once next() can go on without waiting."""
        if self.reads_on_loop and not self._closed:
            await self._responses.ready()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            if self._stalled:
                raise self._stall_error()
            if self.cancelled or self._closed:
                raise StopIteration
            try:
                response = next(self._responses)
            except grpc_stream.NothingYet:  # read on the loop, and nothing has arrived: no text yet
                return ""
            except StopIteration:  # the server ended the call without a final response
                self._close(cancel=False)
                raise
            except grpc.RpcError as exc:
                self._close(cancel=True)
                if self.cancelled:
                    raise StopIteration from None
                if self._stalled:
                    raise self._stall_error() from None
                raise self._error(exc) from None
            self._last = time.monotonic()
            if response.error_message:
                self._close(cancel=True)
                if self.cancelled:
                    raise StopIteration
                raise parse_error(response.error_message)
            self.responses += 1
            result = InferResult(response.infer_response)
            self._observe(result)
            self.logprob_trace += self._logprobs(result)
            chunk = result.as_numpy("text_output")
            raw = ""
            if chunk is not None and chunk.size:
                self.tokens += 1
                raw = self._assembler.feed(chunk.reshape(-1)[0])
            if raw:
                self.chunks += 1
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
            delta = self._trim.feed(raw)
            if grpc_stream.is_final(response):
                delta += self._trim.feed(self._assembler.finish()) + self._trim.finish()
                self.text = self._trim.text
                self._finish_reason = self._ended_by()
                self._close(cancel=False)
                if delta:
                    return delta
                raise StopIteration
            if delta:
                self.text = self._trim.text
                return delta

    def _ended_by(self) -> str:
        """Why the finished reply ended: "length" when it used up max_tokens, else "stop" (end token or stop word).
        The engine does not say, so its streamed tokens are counted."""
        if self._max_tokens and self.tokens >= self._max_tokens and not self._trim.stopped:
            return "length"
        return "stop"

    @property
    def finish_reason(self) -> str | None:
        """"length" (cut at max_tokens), "stop", or None while streaming, after a cancel, stall or error."""
        return self._finish_reason

    def _observe(self, result: InferResult) -> None:
        """Every response passes here first; a subclass reads outputs beside text_output (e.g. finish_reason)."""

    def _logprobs(self, result: InferResult) -> list[float]:
        """The log-probabilities a response carries (kept for every response; the adapter probe, which asks for
        them, is what reads them)."""
        return output_logprobs(result)

    def _stall_error(self) -> StreamStalled:
        return StreamStalled(f"No reply from the server for {self.stall_timeout:.0f} s; the request was cancelled.")

    def _error(self, exc: grpc.RpcError) -> ChatError:
        error = parse_error(grpc_stream.rpc_error_text(exc))
        if isinstance(error, ServerUnreachable):
            grpc_stream.drop_channel(self._url)  # reconnect from scratch next time
        return error

    def idle_since(self) -> float:
        """When the last response arrived (for the stall watchdog)."""
        return self._last

    def on_stall(self) -> None:
        """Called by the watchdog: end the call; the iterating thread raises StreamStalled."""
        if not self._closed:
            self._stalled = True
            self._close(cancel=True)

    def cancel(self) -> None:
        """Cancel the request on the server (the engine stops generating) and end iteration.

        gRPC cancellation reaches a BLS model, but Triton does not pass it on to the steps of an
        ensemble; there the engine gets a `stop` request with the same request id (the id is
        propagated to ensemble steps), as the TensorRT-LLM backend documents.
        """
        if self._closed or self.cancelled:
            return
        self.cancelled = True
        self._close(cancel=True)
        if self._engine_model:
            send_stop(self._url, self._engine_model, self.request_id)

    def _close(self, cancel: bool) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._done.set()  # the request side closes; with cancel the call ends on the server too
        grpc_stream.WATCHDOG.forget(self)
        if cancel and self._responses is not None:
            try:
                self._responses.cancel()
            except Exception:  # noqa: BLE001 - closing a broken stream must not raise
                pass

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started_at

    def __del__(self) -> None:
        if hasattr(self, "_done"):
            self._close(cancel=True)


def send_stop(url: str, engine_model: str, request_id: str, timeout: float = 5.0) -> bool:
    """Ask the engine model to stop request `request_id`; True when the engine answered."""
    inputs = [
        _tensor("input_ids", np.zeros((1, 1), dtype=np.int32), "TYPE_INT32"),
        _tensor("input_lengths", np.zeros((1, 1), dtype=np.int32), "TYPE_INT32"),
        _tensor("request_output_len", np.zeros((1, 1), dtype=np.int32), "TYPE_INT32"),
        _tensor("stop", np.ones((1, 1), dtype=np.bool_), "TYPE_BOOL"),
    ]
    return send_control_request(url, engine_model, inputs, request_id, lambda error: error is None, timeout)


def send_control_request(url: str, model: str, inputs: list, request_id: str,
                         answered: Callable[[object], bool], timeout: float = 5.0) -> bool:
    """One streamed request that carries no text (a `stop`): True when `answered(error)` holds for the reply."""
    replies: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(url)
    try:
        client.start_stream(callback=lambda result, error: replies.put(answered(error)))
        client.async_stream_infer(model, inputs, request_id=request_id)
        return replies.get(timeout=timeout)
    except (queue.Empty, InferenceServerException):
        return False
    finally:
        try:
            client.stop_stream()
            client.close()
        except Exception:  # noqa: BLE001 - closing must not raise
            pass


class TritonChatClient:
    """Talks to one Triton server and one text model (`tensorrt_llm_bls` or `ensemble`)."""

    def __init__(self, url: str, model: str = DEFAULT_MODEL, stall_timeout: float = STREAM_STALL_SECONDS):
        self.url = url
        self.model = model
        self.stall_timeout = stall_timeout
        self._info: dict[str, ModelInfo] = {}
        self._describes: dict[str, bool] = {}  # encoder model -> whether it says what it found

    def _admin(self) -> grpcclient.InferenceServerClient:
        return grpcclient.InferenceServerClient(self.url)

    def status(self) -> ServerStatus:
        client = self._admin()
        try:
            live = client.is_server_live(client_timeout=SERVER_CHECK_TIMEOUT)
            version = client.get_server_metadata(client_timeout=SERVER_CHECK_TIMEOUT).version
            ready = client.is_model_ready(self.model, client_timeout=SERVER_CHECK_TIMEOUT)
            return ServerStatus(live=live, model_ready=ready, version=version)
        except InferenceServerException as exc:
            return ServerStatus(live=False, model_ready=False, detail=str(parse_error(exc.message())))
        finally:
            client.close()

    def model_config(self, model: str) -> dict:
        client = self._admin()
        try:
            return client.get_model_config(model, as_json=True, client_timeout=SERVER_CHECK_TIMEOUT)["config"]
        except InferenceServerException as exc:
            raise parse_error(exc.message()) from None
        finally:
            client.close()

    def model_info(self, refresh: bool = False) -> ModelInfo:
        if refresh or self.model not in self._info:
            self._info[self.model] = ModelInfo.from_config(self.model_config(self.model))
        return self._info[self.model]

    def forget(self) -> None:
        """Drop cached model configs (after a server restart or redeploy)."""
        self._info.clear()
        self._describes.clear()

    def image_descriptions(self, extra: Mapping[str, object]) -> list[dict] | None:
        """What the image encoder found in the pixels of a request's `extra` (None when it cannot say)."""
        pixels = extra.get("image_input")
        if not isinstance(pixels, np.ndarray):
            return None
        encoder = encoder_name(dict(self.model_info().parameters))
        if encoder not in self._describes:
            try:
                self._describes[encoder] = can_describe(self.model_config(encoder))
            except ChatError:  # no such model (an ensemble names it differently): nothing to show
                self._describes[encoder] = False
        return describe_pixels(self.url, encoder, pixels) if self._describes[encoder] else None

    def build_inputs(self, prompt: str, params: SamplingParams, extra: Mapping[str, object] | None = None,
                     info: ModelInfo | None = None) -> list:
        """Request tensors for the inputs this model declares; required inputs must be present."""
        info = info or self.model_info()
        values: dict[str, object] = {"text_input": prompt, "stream": True, **sampling_inputs(params), **(extra or {})}
        if not info.decoupled:
            raise ModelNotReady(
                f"Model '{info.name}' is not decoupled, so it cannot stream; redeploy it with decoupled_mode: true."
            )
        tensors = []
        for name, value in values.items():
            if value is None:
                continue
            target = info.resolve(name)
            if target is None:
                continue
            tensors.append(_tensor(target, value, info.inputs[target][0]))
        return tensors

    def stream(self, prompt: str, params: SamplingParams, extra: Mapping[str, object] | None = None) -> TokenStream:
        """Start one streaming request; iterate the result for text deltas."""
        if not prompt:
            raise InvalidRequest("The prompt is empty.")
        info = self.model_info()
        try:
            return TokenStream(self.url, info, self.build_inputs(prompt, params, extra, info), self.stall_timeout,
                               stop_words=tuple((extra or {}).get("stop_words") or ()),
                               max_tokens=int(params.max_tokens), outputs=info.requested_outputs())
        except ChatError:
            raise
        except InferenceServerException as exc:
            raise parse_error(exc.message()) from None

    def generate(self, prompt: str, params: SamplingParams, extra: Mapping[str, object] | None = None) -> str:
        """Stream to completion and return the whole reply."""
        stream = self.stream(prompt, params, extra)
        for _ in stream:
            pass
        if stream.cancelled:
            raise Cancelled("The request was cancelled.")
        return stream.text
