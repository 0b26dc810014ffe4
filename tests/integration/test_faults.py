"""Faults: Triton killed mid-stream, a client that goes away, a server that is slow to start.

Each test starts its own pacing tritonserver (about a second) and stops or kills it by the pid it
started; the app runs in this process. Only loopback addresses are used.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx
import pytest

from app.bench.load import BenchRequest
from app.bench.targets import Timeline
from benchmarks.app_senders import SseApiSender
from benchmarks.server_process import free_ports
from setup.cpu.pacing import PacingSpec, start_pacing_triton, write_pacing_repository
from tests.bench_fixtures import pacing_log_lines, serve_app


class Server:
    """A pacing tritonserver on fixed ports that a test can kill and start again."""

    def __init__(self, tmp, spec: PacingSpec):
        self.repo = write_pacing_repository(tmp / "repo", spec)
        self.ports = tuple(free_ports(3))
        self.log_path = tmp / "triton.log"
        self.grpc_url = f"127.0.0.1:{self.ports[1]}"
        self.process = None

    def start(self):
        self.process = start_pacing_triton(self.repo, *self.ports, self.log_path)
        return self

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)  # the process group we started
        self.process.wait()

    def stop(self):
        if self.process is not None:
            self.process.stop(grace=5)


def read_events(stream, count: int) -> None:
    """Read `count` server-sent data lines of a streamed reply."""
    seen = 0
    for line in stream.iter_lines():
        seen += line.startswith("data:")
        if seen >= count:
            return


def assert_cancelled_early(server: Server, before: int) -> None:
    """The next request the pacing server logs after line `before` was cancelled far from its 300 words."""
    deadline = time.monotonic() + 10
    while len(pacing_log_lines(server)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = pacing_log_lines(server)[before:]
    assert lines, "the server kept generating for a client that left"
    assert "(cancel) ended after" in lines[0], lines
    assert int(lines[0].split("ended after ")[1].split()[0]) < 60  # far from 300 (10 words/s)


@pytest.fixture
def app_url(server):
    """The pacing server started and the app served in this process against it; closed afterwards."""
    server.start()
    blocks, url, _ = serve_app(server.grpc_url)
    yield url
    blocks.close()


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path, PacingSpec(tokens_per_second=10))
    yield srv
    srv.stop()


class WatchedSseSender(SseApiSender):
    """SseApiSender whose streams' timelines the test can watch while they run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.timelines: dict[int, Timeline] = {}

    def _read(self, session: int, request: BenchRequest, timeline: Timeline) -> None:
        self.timelines[session] = timeline
        super()._read(session, request, timeline)

    def wait_for_first_tokens(self, streams: int, within: float) -> None:
        """Until `streams` streams have shown their first words (each a first update with text)."""
        deadline = time.monotonic() + within
        while sum(t.record.first_token is not None for t in list(self.timelines.values())) < streams:
            assert time.monotonic() < deadline, f"not every stream showed words in {within:.0f} s"
            time.sleep(0.05)


def test_killed_server_ends_every_open_stream_with_a_clear_error_then_recovers(server):
    server.start()
    blocks, url, ctx = serve_app(server.grpc_url)
    sender = WatchedSseSender(url, 4, timeout=20)
    try:
        records = [None] * 4
        threads = [threading.Thread(target=lambda i=i: records.__setitem__(i, sender(i, BenchRequest("hi", 300))))
                   for i in range(4)]
        for thread in threads:
            thread.start()
        sender.wait_for_first_tokens(4, within=120)  # every stream has shown some words
        killed_at = time.monotonic()
        server.kill()
        for thread in threads:
            thread.join(timeout=10)
        assert not any(thread.is_alive() for thread in threads), "a stream hung after the server died"
        for rec in records:
            assert rec.first_token is not None and rec.ended - killed_at < 2.0, rec
            assert rec.error and "The Triton server cannot be reached" in rec.error, rec.error
        # the server comes back on the same ports: the next message works without restarting the app
        server.start()
        again = sender(0, BenchRequest("hi again", 5))
        assert again.error is None and again.text.split() == ["alpha", "bravo", "charlie", "delta", "echo"]
    finally:
        sender.close()
        blocks.close()


def test_client_that_disconnects_stops_generation_on_the_server(server):
    server.start()
    blocks, url, _ = serve_app(server.grpc_url)
    try:
        before = len(pacing_log_lines(server))
        api = url + "gradio_api/call/generate"
        with httpx.Client(timeout=10) as client:
            info = client.get(url + "gradio_api/info").json()["named_endpoints"]["/generate"]["parameters"]
            args = {"text": "tell me a long story", "max_tokens": 300}
            data = [args.get(p["parameter_name"], p["parameter_default"]) for p in info]
            event = client.post(api, json={"data": data, "session_hash": "fault-disconnect"}).json()["event_id"]
            with client.stream("GET", f"{api}/{event}") as stream:
                read_events(stream, 5)  # then leave mid-stream: the connection is closed here
        assert_cancelled_early(server, before)
    finally:
        blocks.close()


def test_openai_client_that_disconnects_stops_generation_on_the_server(server, app_url):
    before = len(pacing_log_lines(server))
    body = {"messages": [{"role": "user", "content": "tell me a long story"}], "max_tokens": 300, "stream": True}
    with httpx.Client(timeout=10) as client, client.stream("POST", app_url + "v1/chat/completions", json=body) as reply:
        assert reply.status_code == 200
        read_events(reply, 5)  # then leave mid-stream: the connection is closed here
    assert_cancelled_early(server, before)


def test_openai_caller_that_hangs_up_on_a_whole_reply_stops_generation(server, app_url):
    before = len(pacing_log_lines(server))
    body = {"messages": [{"role": "user", "content": "tell me a long story"}], "max_tokens": 300}
    with pytest.raises(httpx.ReadTimeout):  # the caller gives up after 1.5 s and closes the connection
        httpx.post(app_url + "v1/chat/completions", json=body, timeout=httpx.Timeout(5.0, read=1.5))
    assert_cancelled_early(server, before)


def test_openai_stream_ends_with_an_error_event_when_the_server_dies(server, app_url):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 300, "stream": True}
    events, killed_at = [], None
    with httpx.Client(timeout=10) as client, client.stream("POST", app_url + "v1/chat/completions", json=body) as reply:
        for line in reply.iter_lines():
            if line.startswith("data:"):
                events.append(line[5:].strip())
            if len(events) == 4 and killed_at is None:
                killed_at = time.monotonic()
                server.kill()
    ended = time.monotonic()
    assert killed_at is not None and ended - killed_at < 2.0
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert error["type"] == "server_error" and "The Triton server cannot be reached" in error["message"]


def test_gradio_client_cancel_stops_generation_on_the_server(server):
    from gradio_client import Client

    server.start()
    blocks, url, _ = serve_app(server.grpc_url)
    try:
        before = len(pacing_log_lines(server))
        job = Client(url, verbose=False).submit(text="a long story", max_tokens=300, api_name="/generate")
        deadline = time.monotonic() + 10
        while len(job.outputs()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        job.cancel()
        while len(pacing_log_lines(server)) == before and time.monotonic() < deadline + 5:
            time.sleep(0.1)
        lines = pacing_log_lines(server)[before:]
        assert lines and "(cancel) ended after" in lines[0], lines
    finally:
        blocks.close()


def test_slow_server_shows_waiting_then_works(tmp_path):
    from app.web.pages.chat import status_markdown

    server = Server(tmp_path, PacingSpec(tokens_per_second=50, startup_delay_seconds=2))
    blocks, url, ctx = serve_app(server.grpc_url)
    sender = SseApiSender(url, 1, timeout=10)
    try:
        assert status_markdown(ctx).startswith("**Waiting**")
        early = sender(0, BenchRequest("hi", 3))  # a message before the server is up gets a clear answer
        assert early.error and "The Triton server cannot be reached" in early.error
        starting = threading.Thread(target=server.start)
        starting.start()
        assert status_markdown(ctx).startswith("**Waiting**")  # still loading its model
        starting.join(timeout=60)
        assert status_markdown(ctx).startswith("**Ready**")
        later = sender(0, BenchRequest("hi", 3))
        assert later.error is None and later.text.split() == ["alpha", "bravo", "charlie"]
    finally:
        sender.close()
        blocks.close()
        server.stop()


def test_stalled_stream_is_cancelled_with_a_message(server):
    """A server that stops answering (here: paused) does not hang a chat past the stall timeout."""
    from app.core.errors import StreamStalled
    from app.core.sampling import SamplingParams
    from app.triton.client import TritonChatClient

    server.start()
    client = TritonChatClient(server.grpc_url, model="pacing", stall_timeout=1.0)
    stream = client.stream("hi", SamplingParams(max_tokens=100))
    next(stream)
    os.killpg(server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(StreamStalled, match="No reply from the server for 1 s"):
            for _ in stream:
                pass
        assert time.monotonic() - started < 3
    finally:
        os.killpg(server.process.pid, signal.SIGCONT)


def test_a_stalled_stream_read_on_the_loop_is_cancelled_with_a_message(server):
    """The same, for a stream read on an event loop (as the APIs read): the watchdog's thread ends it there."""
    from app.core.errors import StreamStalled
    from app.core.sampling import SamplingParams
    from app.triton.client import TritonChatClient
    from tests.integration.test_stream import read_on_a_loop

    server.start()
    client = TritonChatClient(server.grpc_url, model="pacing", stall_timeout=1.0)
    stopped = []

    def opened():
        stream = client.stream("hi", SamplingParams(max_tokens=100))
        threading.Timer(0.3, lambda: stopped.append(time.monotonic()) or os.killpg(server.process.pid,
                                                                                  signal.SIGSTOP)).start()
        return stream

    try:
        with pytest.raises(StreamStalled, match="No reply from the server for 1 s"):
            read_on_a_loop(opened)
        assert stopped and time.monotonic() - stopped[0] < 3
    finally:
        os.killpg(server.process.pid, signal.SIGCONT)


def test_killed_demo_server_comes_back_and_adapters_are_sent_again(tmp_path):
    """The CPU deployment with LoRA, killed and started again on the same ports: the app's next message
    with an adapter works (the server's LoRA cache is empty now: the weights travel again by themselves)."""
    from setup.cpu.demo import start_demo_triton
    from tests.integration.test_lora import looks_pirate
    from tests.servers import start_triton

    triton = start_triton(tmp_path)
    blocks, url, ctx = serve_app(triton.grpc_url, model="tensorrt_llm_bls")
    body = {"model": "pirate", "temperature": 0, "max_tokens": 24,
            "messages": [{"role": "user", "content": "Tell me about the sea."}]}
    try:
        first = httpx.post(url + "v1/chat/completions", json=body, timeout=60).json()
        pirate = first["choices"][0]["message"]["content"]
        assert looks_pirate(pirate) and ctx.adapters.info("pirate").held_by_server
        os.killpg(triton.process.pid, signal.SIGKILL)  # the process group we started
        triton.process.wait()
        down = httpx.post(url + "v1/chat/completions", json=body, timeout=30)
        assert down.status_code == 503 and "cannot be reached" in down.json()["error"]["message"]
        # the same memory hold for the new server (a plain process here would never give it back)
        triton.process = triton.process.restarted(start_demo_triton(
            triton.http_port, triton.grpc_port, triton.metrics_port, repo=triton.repo,
            log_path=tmp_path / "triton-again.log", log=lambda *_: None))
        again = httpx.post(url + "v1/chat/completions", json=body, timeout=60)
        assert again.status_code == 200, again.text
        assert again.json()["choices"][0]["message"]["content"] == pirate  # greedy: the same adapter's words
        assert ctx.adapters.info("pirate").held_by_server
    finally:
        blocks.close()
        triton.process.stop()


def test_openai_api_over_its_concurrency_answers_429_then_serves_again(server):
    server.start()
    blocks, url, _ = serve_app(server.grpc_url, concurrency=1)
    body = {"messages": [{"role": "user", "content": "a long story"}], "max_tokens": 300, "stream": True}
    try:
        with httpx.Client(timeout=10) as client, client.stream("POST", url + "v1/chat/completions", json=body) as reply:
            lines = reply.iter_lines()  # kept open (closing it would hang up): the app's only slot stays taken
            assert [next(line for line in lines if line.startswith("data:")) for _ in range(3)]
            busy = httpx.post(url + "v1/chat/completions", json={**body, "stream": False}, timeout=10)
            assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
            assert "limit of 1 replies at once" in busy.json()["error"]["message"]
        deadline = time.monotonic() + 5  # the first caller left: its slot is free once the server stopped
        while True:
            again = httpx.post(url + "v1/chat/completions", json={**body, "stream": False, "max_tokens": 3}, timeout=10)
            if again.status_code != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert again.status_code == 200 and again.json()["choices"][0]["message"]["content"] == "alpha bravo charlie"
    finally:
        blocks.close()
