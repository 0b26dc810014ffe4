"""app/triton/transport.py without tritonserver: one shared channel per address, gRPC errors in
tritonclient's words, a ModelStreamInfer call against an in-process gRPC server on loopback (the request
it sends, the request side held open until `done`; read on an event loop where LOOP_READS names one), and the
stall watchdog on a real thread."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from concurrent import futures

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from app.triton.transport import (
    LOOP_READS,
    WATCH_INTERVAL,
    LoopResponses,
    NothingYet,
    StallWatchdog,
    drop_channel,
    is_final,
    open_stream,
    rpc_error_text,
    stub_for,
)
from tests.threads import run_async


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_one_stub_per_address_until_the_channel_is_dropped():
    url, other = f"127.0.0.1:{closed_port()}", f"127.0.0.1:{closed_port()}"
    try:
        first = stub_for(url)
        assert stub_for(url) is first and stub_for(other) is not first
        drop_channel(url)
        assert stub_for(url) is not first
        drop_channel("127.0.0.1:1")  # never opened: nothing to drop
    finally:
        drop_channel(url)
        drop_channel(other)


def test_rpc_errors_read_like_tritonclients():
    url = f"127.0.0.1:{closed_port()}"
    try:
        with pytest.raises(grpc.RpcError) as raised:
            stub_for(url).ServerLive(service_pb2.ServerLiveRequest(), timeout=2)
    finally:
        drop_channel(url)
    text = rpc_error_text(raised.value)
    assert text.startswith(f"[{raised.value.code()}] ") and text.endswith(raised.value.details())

    class Bare(grpc.RpcError):
        def __str__(self):
            return "no status"

    assert rpc_error_text(Bare()) == "no status"


class EchoServicer(service_pb2_grpc.GRPCInferenceServiceServicer):
    """Answers the first request with its id, model and empty-final flag (and, with `final`, as the request's last
    response); a second response once the client closed its request side. `hold` keeps it from answering at all
    until set."""

    final = False

    def __init__(self):
        self.requests: list = []
        self.hold = threading.Event()
        self.hold.set()

    def ModelStreamInfer(self, request_iterator, context):  # noqa: N802 - the gRPC method name
        request = next(request_iterator)
        self.requests.append(request)
        self.hold.wait()
        flag = request.parameters["triton_enable_empty_final_response"].bool_param
        response = service_pb2.ModelInferResponse(model_name=request.model_name, id=request.id)
        response.parameters["empty_final"].bool_param = flag
        if self.final:
            response.parameters["triton_final_response"].bool_param = True
        yield service_pb2.ModelStreamInferResponse(infer_response=response)
        for _ in request_iterator:  # blocks while the client keeps its side open
            pass
        yield service_pb2.ModelStreamInferResponse(error_message="request side closed")


def serving(servicer):
    """`servicer` on an in-process gRPC server on a free loopback port: yields (address, servicer), then stops it."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(grace=None)
    drop_channel(f"127.0.0.1:{port}")


@pytest.fixture
def grpc_server():
    yield from serving(EchoServicer())


def test_open_stream_sends_one_request_and_holds_the_request_side_until_done(grpc_server):
    url, servicer = grpc_server
    prompt = grpcclient.InferInput("text_input", [1, 1], "BYTES")
    prompt.set_data_from_numpy(np.array([["hi"]], dtype=object))
    done = threading.Event()
    responses = open_stream(url, "ensemble", [prompt], "req-7", done)
    first = next(responses)
    assert first.infer_response.model_name == "ensemble" and first.infer_response.id == "req-7"
    assert first.infer_response.parameters["empty_final"].bool_param is True
    sent = servicer.requests[0]
    assert [i.name for i in sent.inputs] == ["text_input"] and list(sent.inputs[0].shape) == [1, 1]
    ended = threading.Timer(0.2, done.set)
    ended.start()
    started = time.monotonic()
    second = next(responses)  # arrives only after done.set()
    assert second.error_message == "request side closed" and time.monotonic() - started >= 0.15
    with pytest.raises(StopIteration):
        next(responses)


def test_cancel_ends_the_call(grpc_server):
    url, _ = grpc_server
    responses = open_stream(url, "ensemble", [], "req-8", threading.Event())
    next(responses)
    responses.cancel()
    with pytest.raises(grpc.RpcError) as raised:
        next(responses)
    assert raised.value.code() == grpc.StatusCode.CANCELLED


class FinalServicer(EchoServicer):
    """Its first response is the request's last (Triton's triton_final_response)."""

    final = True


@pytest.fixture
def final_server():
    servicer = FinalServicer()
    try:
        yield from serving(servicer)
    finally:
        servicer.hold.set()  # before the server stops: a handler still held would hold up its stop


def on_new_loop(coro_of_loop):
    """coro_of_loop(loop) run on a new loop on a thread of its own, with the streams it opens read on that loop."""
    async def main():
        loop = asyncio.get_running_loop()
        LOOP_READS.set(loop)
        return await coro_of_loop(loop)

    return run_async(main(), timeout=30)


def test_a_stream_opened_where_a_loop_reads_is_read_on_that_loop_and_closes_its_side_at_the_final(final_server):
    url, _ = final_server

    async def read(loop):
        responses = open_stream(url, "ensemble", [], "req-9", threading.Event())
        assert isinstance(responses, LoopResponses)
        with pytest.raises(NothingYet):  # on the loop, next() never waits
            next(responses)
        await responses.ready()
        first = next(responses)
        await responses.ready()  # the request side closed at the final response: the server says so
        second = next(responses)
        await responses.ready()
        with pytest.raises(StopIteration):
            next(responses)
        return first, second

    first, second = on_new_loop(read)
    assert first.infer_response.id == "req-9" and is_final(first)
    assert second.error_message == "request side closed"


def test_without_a_loop_the_stream_is_read_by_the_calling_thread(final_server):
    url, _ = final_server
    responses = open_stream(url, "ensemble", [], "req-10", threading.Event())
    assert not isinstance(responses, LoopResponses) and is_final(next(responses))
    responses.cancel()


def test_a_thread_off_the_loop_may_iterate_a_loop_stream_and_cancel_it(final_server):
    url, servicer = final_server
    servicer.hold.clear()  # the server answers nothing yet
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        async def opened():
            return open_stream(url, "ensemble", [], "req-11", threading.Event())

        responses = asyncio.run_coroutine_threadsafe(_on(loop, opened), loop).result(5)
        threading.Timer(0.2, responses.cancel).start()  # from a third thread
        started = time.monotonic()
        with pytest.raises(StopIteration):  # this thread waited while the loop read; the cancel ended the call
            next(responses)
        assert 0.15 <= time.monotonic() - started < 5
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()


async def _on(loop, opened):
    LOOP_READS.set(loop)
    return await opened()


class Stream:
    def __init__(self, idle_for: float, stall_timeout: float):
        self._since = time.monotonic() - idle_for
        self.stall_timeout = stall_timeout
        self.stalls = 0

    def idle_since(self) -> float:
        return self._since

    def on_stall(self) -> None:
        self.stalls += 1


def test_the_watchdog_reports_a_stalled_stream_once_and_leaves_busy_ones_alone():
    watchdog = StallWatchdog()
    stalled, busy, forgotten = Stream(10, 1), Stream(0, 60), Stream(10, 1)
    for stream in (stalled, busy, forgotten):
        watchdog.watch(stream)
    watchdog.forget(forgotten)
    end = time.monotonic() + 10
    while not stalled.stalls and time.monotonic() < end:
        time.sleep(0.02)
    time.sleep(WATCH_INTERVAL * 2)  # more rounds: no second report
    assert (stalled.stalls, busy.stalls, forgotten.stalls) == (1, 0, 0)


def test_the_watchdog_does_not_keep_a_stream_alive():
    watchdog = StallWatchdog()
    stream = Stream(0, 60)
    watchdog.watch(stream)
    gone = weakref.ref(stream)
    del stream
    gc.collect()
    assert gone() is None
