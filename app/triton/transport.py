"""Triton's ModelStreamInfer over gRPC, lean: one channel per server shared by all streams, responses
read by the caller's own thread, and one watchdog thread for every stream's stall timeout.

tritonclient's stream API costs a channel and two threads per stream and hands each response over
two threads (gRPC -> its reader thread -> a callback queue -> the caller): about 0.35 ms of CPU per
streamed token and 2.4 ms per stream on this machine's CPU. Reading the gRPC response iterator
directly costs about 0.22 ms per token and 0.9 ms per stream, which is most of what a web app
serving 32 streaming chats spends. Requests are still built by tritonclient (InferInput).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.grpc._client import MAX_GRPC_MESSAGE_SIZE
from tritonclient.grpc._utils import _get_inference_request

CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_SIZE),
    ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_SIZE),
    # a restarted server is reached again within about a second (gRPC's default backoff grows to 120 s)
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 1000),
]
WATCH_INTERVAL = 0.25

_channels: dict[str, tuple[grpc.Channel, service_pb2_grpc.GRPCInferenceServiceStub]] = {}
_channels_lock = threading.Lock()


def stub_for(url: str) -> service_pb2_grpc.GRPCInferenceServiceStub:
    """The shared stub for a server address (HTTP/2 carries many streams on one connection)."""
    with _channels_lock:
        if url not in _channels:
            channel = grpc.insecure_channel(url, options=CHANNEL_OPTIONS)
            _channels[url] = (channel, service_pb2_grpc.GRPCInferenceServiceStub(channel))
        return _channels[url][1]


def drop_channel(url: str) -> None:
    """Forget a server's channel (after it became unreachable); the next stream opens a new one."""
    with _channels_lock:
        entry = _channels.pop(url, None)
    if entry is not None:
        entry[0].close()


def _requests(request: service_pb2.ModelInferRequest, done: threading.Event) -> Iterator:
    yield request
    done.wait()  # keep the request side open until the reply ended (closing it early ends the call)


def open_stream(url: str, model: str, inputs: list, request_id: str, done: threading.Event,
                outputs: list | None = None):
    """Start one ModelStreamInfer call with one request; returns gRPC's response iterator (which
    also has .cancel()). `done.set()` closes the request side once the reply has ended. `outputs`
    (InferRequestedOutput) are the outputs asked for; None asks for every output the model declares."""
    request = _get_inference_request(model_name=model, inputs=inputs, model_version="", request_id=request_id,
                                     outputs=outputs, sequence_id=0, sequence_start=False, sequence_end=False,
                                     priority=0, timeout=None, parameters=None)
    request.parameters["triton_enable_empty_final_response"].bool_param = True
    return stub_for(url).ModelStreamInfer(_requests(request, done))


def rpc_error_text(error: grpc.RpcError) -> str:
    """gRPC status as tritonclient words it ("[StatusCode.UNAVAILABLE] Socket closed")."""
    code = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else str(error)
    return f"[{code}] {details}" if code is not None else str(details)


class StallWatchdog:
    """One daemon thread that calls `on_stall()` of every watched stream whose `idle_since()` is older
    than its `stall_timeout`; streams are held weakly and leave when closed."""

    def __init__(self) -> None:
        self._streams: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, stream) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="stream-watchdog", daemon=True)
                self._thread.start()

    def forget(self, stream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            now = time.monotonic()
            with self._lock:
                streams = list(self._streams)
            for stream in streams:
                if now - stream.idle_since() > stream.stall_timeout:
                    self.forget(stream)
                    stream.on_stall()


WATCHDOG = StallWatchdog()
