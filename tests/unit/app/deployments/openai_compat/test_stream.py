"""app/deployments/openai_compat/stream.py against a real loopback HTTP server (stdlib http.server) that plays an
OpenAI-compatible /chat/completions stream: text deltas and counts, error answers and error events, a reply
cut short, a stalled reply, and cancel() closing the connection (the server sees it go)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time

import httpx
import pytest

from app.core.errors import (
    ChatError,
    InputTooLong,
    InvalidRequest,
    ModelNotReady,
    ServerUnreachable,
    StreamStalled,
)
from app.deployments.openai_compat.stream import OpenAIStream

BODY = {"model": "smol", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def delta(text: str, finish: str | None = None) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})


class Server:
    """A scripted server: each path plays one scene. `seen` records request bodies; `gone` is set when a
    client hung up on the endless scene."""

    def __init__(self):
        self.seen: list[dict] = []
        self.gone = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection closes

            def log_message(self, *_):
                pass

            def do_POST(self):  # noqa: N802 - http.server's name
                outer.seen.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                getattr(outer, "scene_" + self.path.strip("/").replace("-", "_"))(self)

            def start(self, status=200, content_type="text/event-stream"):
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("x-request-id", "req-42")
                self.end_headers()

            def put(self, data: bytes):
                self.wfile.write(data)
                self.wfile.flush()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    @staticmethod
    def scene_story(h):
        h.start()
        h.put(b": keep-alive comment\n\n")
        h.put(event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
        h.put(b"data: not json\n\n")
        h.put(delta("Hel") + delta("lo"))
        h.put(delta(" there", finish="stop"))
        h.put(event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}))
        h.put(b"data: [DONE]\n\n")
        h.put(delta(" after the end"))

    @staticmethod
    def scene_no_usage(h):
        h.start()
        h.put(delta("a") + delta("") + delta("b") + b"data: [DONE]\n\n")

    @staticmethod
    def scene_cut(h):
        h.start()
        h.put(delta("half"))  # then the connection closes: no finish, no [DONE]

    @staticmethod
    def scene_finished_without_done(h):
        h.start()
        h.put(delta("all", finish="length"))

    @staticmethod
    def scene_error_event(h):
        h.start()
        h.put(delta("x") + event({"error": {"message": "prompt has 9000 tokens, too long for the engine",
                                             "type": "invalid_request_error", "code": 400}}))

    @staticmethod
    def scene_bare_error_event(h):
        h.start()
        h.put(b'data: {"error": "the engine failed"}\n\n')

    @staticmethod
    def scene_missing_model(h):
        h.start(404, "application/json")
        h.put(json.dumps({"error": {"message": "The model `smol` does not exist."}}).encode())

    @staticmethod
    def scene_refused(h):
        h.start(422, "application/json")
        h.put(b'{"detail": "max_tokens must be positive"}')

    @staticmethod
    def scene_bad_key(h):
        h.start(401, "application/json")
        h.put(b'{"error": {"message": "no"}}')

    def scene_stall(self, h):
        h.start()
        h.put(delta("first"))
        self.release.wait(10)

    def scene_slow_headers(self, h):
        self.release.wait(10)

    def scene_endless(self, h):
        h.start()
        try:
            while not self.release.is_set():
                h.put(delta("tick "))
                time.sleep(0.02)
        except OSError:
            self.gone.set()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def client():
    with httpx.Client() as http_client:
        yield http_client


def test_text_arrives_as_deltas_and_the_server_count_wins(server, client):
    stream = OpenAIStream(client, server.url + "/story", BODY, stall_timeout=5)
    assert stream.request_id == "req-42"
    assert list(stream) == ["Hel", "lo", " there"]  # nothing after [DONE]
    assert stream.text == "Hello there" and stream.finish_reason == "stop"
    assert stream.chunks == 7 and stream.responses == 3
    assert stream.time_to_first_token is not None and 0 <= stream.time_to_first_token < 5
    assert server.seen == [BODY]


def test_without_usage_the_deltas_are_the_count(server, client):
    stream = OpenAIStream(client, server.url + "/no-usage", BODY, stall_timeout=5)
    assert "".join(stream) == "ab" and stream.chunks == 2 and stream.finish_reason is None


def test_a_reply_cut_short_is_an_unreachable_server(server, client):
    stream = OpenAIStream(client, server.url + "/cut", BODY, stall_timeout=5)
    assert next(stream) == "half"
    with pytest.raises(ServerUnreachable, match="closed the reply before it finished"):
        next(stream)


def test_a_finished_reply_may_end_without_done(server, client):
    stream = OpenAIStream(client, server.url + "/finished-without-done", BODY, stall_timeout=5)
    assert list(stream) == ["all"] and stream.finish_reason == "length"


def test_an_error_event_in_the_stream_becomes_a_typed_error(server, client):
    stream = OpenAIStream(client, server.url + "/error-event", BODY, stall_timeout=5)
    assert next(stream) == "x"
    with pytest.raises(InputTooLong, match="9000 tokens"):
        next(stream)
    with pytest.raises(StopIteration):  # the stream is closed after the error
        next(stream)


def test_an_error_event_without_a_code_is_a_refused_request(server, client):
    stream = OpenAIStream(client, server.url + "/bare-error-event", BODY, stall_timeout=5)
    with pytest.raises(InvalidRequest, match="the engine failed"):
        next(stream)


@pytest.mark.parametrize("path, error, words", [
    ("/missing-model", ModelNotReady, "does not serve 'smol'"),
    ("/bad-key", ChatError, "refused the API key (401)"),
])
def test_an_error_answer_is_raised_before_any_text(server, client, path, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        OpenAIStream(client, server.url + path, BODY, stall_timeout=5)


def test_a_stall_mid_reply_is_reported_after_the_timeout(server, client):
    stream = OpenAIStream(client, server.url + "/stall", BODY, stall_timeout=0.3)
    assert next(stream) == "first"
    started = time.monotonic()
    with pytest.raises(StreamStalled, match="No reply from the server"):
        next(stream)
    assert 0.25 < time.monotonic() - started < 8  # the server holds it for 10 s


def test_a_server_that_never_answers_is_a_stall(server, client):
    started = time.monotonic()
    with pytest.raises(StreamStalled):
        OpenAIStream(client, server.url + "/slow-headers", BODY, stall_timeout=0.3)
    assert time.monotonic() - started < 8


def test_nobody_listening_is_an_unreachable_server(client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    with pytest.raises(ServerUnreachable, match=f"127.0.0.1:{port}"):
        OpenAIStream(client, f"http://127.0.0.1:{port}/v1/chat/completions", BODY, stall_timeout=1)


def test_cancel_from_another_thread_ends_iteration_and_the_connection(server, client):
    stream = OpenAIStream(client, server.url + "/endless", BODY, stall_timeout=5)
    got = [next(stream), next(stream)]
    threading.Timer(0.1, stream.cancel).start()
    rest = list(stream)  # ends quietly, no error
    assert got == ["tick ", "tick "] and stream.cancelled
    assert stream.text == "tick " * (2 + len(rest))
    assert server.gone.wait(8), "the server kept writing to a connection the client had closed"
    stream.cancel()  # a second cancel is harmless
    assert list(stream) == []


def test_an_invalid_request_answer_is_typed(server, client):
    with pytest.raises(InvalidRequest, match="max_tokens must be positive"):
        OpenAIStream(client, server.url + "/refused", BODY, stall_timeout=5)
