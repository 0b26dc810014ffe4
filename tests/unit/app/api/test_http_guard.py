"""The HTTP guard (app/api/http_guard.py) around a tiny ASGI app, driven with ASGI messages: host names,
origins, CORS, body limits and timeouts, failed logins, jobs nobody reads. No server, no Gradio."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from app.api.http_guard import (
    FailureLimiter,
    Guard,
    GuardSettings,
    HttpGuardMiddleware,
    JobWatch,
    allowed_host_names,
    host_header_name,
    origin_name,
    wrap_outermost,
)
from tests.threads import run_async

PORT = 7860


class ClientDisconnect(Exception):
    """What Starlette raises when the body ends in http.disconnect."""


async def echo_app(scope, receive, send):
    """Reads the whole body, then answers 200 with its size; /login answers 400 unless the body is 'good'."""
    size, body = 0, b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        size += len(message.get("body", b""))
        body += message.get("body", b"")[:16]
        if not message.get("more_body", False):
            break
    status = 400 if scope["path"] == "/login" and body != b"good" else 200
    if scope["path"].startswith("/gradio_api/call/") and scope["method"] == "POST":
        payload = json.dumps({"event_id": "e1"}).encode()
    else:
        payload = json.dumps({"bytes": size}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


def reflecting_cors(app):
    """Like Gradio's CORS middleware when the Host is not localhost: answers preflights and echoes any Origin."""
    async def middleware(scope, receive, send):
        origin = dict(scope["headers"]).get(b"origin")
        if origin and scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"access-control-allow-origin", origin)]})
            await send({"type": "http.response.body", "body": b"OK"})
            return

        async def add_header(message):
            if origin and message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"access-control-allow-origin", origin)]
            await send(message)
        await app(scope, receive, add_header)
    return middleware


def make_guard(**settings) -> Guard:
    return Guard(GuardSettings(**{"bind_host": "127.0.0.1", **settings}))


def guarded(guard: Guard | None = None, app=echo_app):
    return HttpGuardMiddleware(reflecting_cors(app), guard=guard or make_guard())


class Reply:
    def __init__(self, messages: list[dict]):
        start = next(m for m in messages if m["type"] == "http.response.start")
        self.status = start["status"]
        self.headers = {k.decode().lower(): v.decode() for k, v in start.get("headers", [])}
        self.body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")

    def json(self):
        return json.loads(self.body)


def request(app, method="GET", path="/", headers=None, chunks=(b"",), host=f"127.0.0.1:{PORT}",
            client=("10.0.0.5", 4000), pause: float | None = None, query=b"") -> Reply:
    """One request through `app`; `chunks` arrive one per receive(); `pause` stalls before the last chunk;
    a chunk None is the client hanging up."""
    raw = [(b"host", host.encode())] if host is not None else []
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": method, "path": path, "headers": raw, "client": client,
             "query_string": query}
    sent: list[dict] = []

    async def run():
        pending = list(chunks)

        async def receive():
            if not pending:
                await asyncio.sleep(3600)  # the body is over: wait for a disconnect that never comes
            chunk = pending.pop(0)
            if pause is not None and not pending:
                await asyncio.sleep(pause)
            if chunk is None:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)

    run_async(run())
    return Reply(sent)


# ----- host names -----

@pytest.mark.parametrize("header, name", [
    ("127.0.0.1:7860", "127.0.0.1"), ("LocalHost:7860", "localhost"), ("[::1]:7860", "::1"), ("[::1]", "::1"),
    ("example.com.", "example.com"), ("gpu-box.lan", "gpu-box.lan"), ("evil.example:80", "evil.example"),
    ("a b", None), ("host:port", None), ("[::1", None), ("", None),
])
def test_host_header_names(header, name):
    assert host_header_name(header) == name


@pytest.mark.parametrize("origin, name", [
    ("http://127.0.0.1:7860", "127.0.0.1"), ("https://Gpu-Box.lan", "gpu-box.lan"), ("http://[::1]:7860", "::1"),
    ("null", None), ("file://", None), ("chrome-extension://abc", None),
])
def test_origin_names(origin, name):
    assert origin_name(origin) == name


def test_allowed_host_names_follow_the_bind_address():
    assert allowed_host_names("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert allowed_host_names("localhost", ["gpu-box.lan"]) == {"127.0.0.1", "localhost", "::1", "gpu-box.lan"}
    assert allowed_host_names("192.168.1.5") == {"192.168.1.5"}
    every = allowed_host_names("0.0.0.0")
    assert {"127.0.0.1", "localhost", "::1"} <= every and len(every) > 3  # plus this machine's names/addresses
    assert "evil.example" not in every


# ----- host and origin checks -----

def test_foreign_host_is_refused_with_a_sentence():
    reply = request(guarded(), host=f"evil.example:{PORT}")
    assert reply.status == 421
    message = reply.json()["error"]["message"]
    assert "does not answer to the host name 'evil.example'" in message and "--allowed-hosts" in message


def test_loopback_names_and_allowed_hosts_are_served():
    app = guarded(make_guard(allowed_hosts=("gpu-box.lan",)))
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", "gpu-box.lan", "GPU-BOX.LAN:443"):
        assert request(app, host=host).status == 200, host
    assert request(app, host=None).status == 400


def test_foreign_origin_is_refused_and_gets_no_cors_header():
    app = guarded()
    for method in ("POST", "GET", "OPTIONS"):
        headers = {"origin": "http://evil.example", "access-control-request-method": "POST"}
        reply = request(app, method=method, path="/v1/chat/completions", headers=headers)
        assert reply.status == 403, method
        assert "access-control-allow-origin" not in reply.headers
        assert "Requests from pages on http://evil.example are refused" in reply.json()["error"]["message"]
    assert request(app, method="POST", headers={"origin": "null"}).status == 403


def test_same_origin_pages_keep_working():
    app = guarded()
    reply = request(app, method="POST", path="/gradio_api/queue/join", headers={"origin": f"http://127.0.0.1:{PORT}"},
                    chunks=[b"{}"])
    assert reply.status == 200 and reply.headers["access-control-allow-origin"] == f"http://127.0.0.1:{PORT}"
    assert request(app, method="OPTIONS", headers={"origin": f"http://localhost:{PORT}"}).status == 200


# ----- bodies -----

def test_declared_length_over_the_route_limit_is_refused_before_reading():
    app = guarded(make_guard(body_limits={"/v1/chat/completions": 1000}, default_body_limit=100))
    reply = request(app, method="POST", path="/v1/chat/completions", headers={"content-length": "1001"})
    assert reply.status == 413 and reply.headers["connection"] == "close"
    assert reply.json()["error"]["message"] == "The request body is larger than 1 KB."
    assert request(app, method="POST", path="/v1/chat/completions", chunks=[b"x" * 1000]).json() == {"bytes": 1000}
    assert request(app, method="POST", path="/gradio_api/queue/join", chunks=[b"x" * 101]).status == 413


def test_body_is_counted_as_it_arrives_not_by_its_declared_length():
    app = guarded(make_guard(default_body_limit=3 * 2**20))
    reply = request(app, method="POST", path="/x", headers={"content-length": "10"},
                    chunks=[b"x" * 2**20] * 4)
    assert reply.status == 413
    assert reply.json()["error"]["message"] == "The request body is larger than 3 MB."


def test_stalled_body_gets_408_and_the_connection_closes(caplog):
    app = guarded(make_guard(body_stall_seconds=0.2))
    with caplog.at_level(logging.DEBUG):
        reply = request(app, method="POST", path="/x", chunks=[b"{", b"}"], pause=5)
    assert reply.status == 408 and reply.headers["connection"] == "close"
    assert reply.json()["error"]["message"].startswith("The request body stopped arriving: nothing came for 0.2 s")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_client_that_hangs_up_mid_body_leaves_no_traceback(caplog):
    with caplog.at_level(logging.DEBUG):
        sent = []

        async def run():
            scope = {"type": "http", "method": "POST", "path": "/x", "headers": [(b"host", b"localhost")],
                     "client": ("10.0.0.5", 1), "query_string": b""}
            messages = [{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}]

            async def receive():
                return messages.pop(0)

            async def send(message):
                sent.append(message)
            await guarded()(scope, receive, send)

        run_async(run())  # the app's ClientDisconnect does not escape
    assert sent == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_app_error_that_is_not_about_the_body_still_surfaces():
    async def broken(scope, receive, send):
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        request(guarded(app=broken))


def test_large_bodies_at_once_are_bounded():
    guard = make_guard(large_body_bytes=10, large_body_slots=1, default_body_limit=1000)
    release = asyncio.Event()

    async def slow_app(scope, receive, send):
        await release.wait()
        await echo_app(scope, receive, send)

    async def run():
        app = HttpGuardMiddleware(slow_app, guard=guard)
        results = []

        async def one(delay):
            await asyncio.sleep(delay)
            sent = []
            chunks = [{"type": "http.request", "body": b"x" * 20, "more_body": False}]

            async def receive():
                return chunks.pop(0) if chunks else await asyncio.sleep(3600)

            async def send(message):
                sent.append(message)
            scope = {"type": "http", "method": "POST", "path": "/x", "client": ("10.0.0.5", 1), "query_string": b"",
                     "headers": [(b"host", b"localhost"), (b"content-length", b"20")]}
            await app(scope, receive, send)
            results.append(Reply(sent))
            release.set()

        await asyncio.gather(one(0), one(0.05))
        return results

    busy, served = run_async(run())
    assert busy.status == 503 and busy.headers["retry-after"] == "1"
    assert "limit of 1 large requests at once" in busy.json()["error"]["message"]
    assert served.status == 200 and guard.large_in_use == 0


# ----- failed logins -----

def test_failed_logins_are_limited_per_client_address():
    app = guarded(make_guard(logins=True, login_failures=3))
    for _ in range(3):
        assert request(app, method="POST", path="/login", chunks=[b"bad"]).status == 400
    blocked = request(app, method="POST", path="/login", chunks=[b"good"])
    assert blocked.status == 429 and 50 <= int(blocked.headers["retry-after"]) <= 60
    assert "Too many failed logins from 10.0.0.5" in blocked.json()["error"]["message"]
    assert request(app, method="POST", path="/login", chunks=[b"good"], client=("10.0.0.6", 1)).status == 200
    assert request(app, method="GET", path="/v1/models", client=("10.0.0.5", 1)).status == 429
    assert request(app, method="GET", path="/").status == 200  # the page itself is not a login


def test_failed_logins_are_not_counted_without_logins():
    app = guarded(make_guard(logins=False, login_failures=1))
    for _ in range(3):
        assert request(app, method="POST", path="/login", chunks=[b"bad"]).status == 400


def test_failure_limiter_window():
    now = [0.0]
    limiter = FailureLimiter(allowed=2, window=60, clock=lambda: now[0])
    limiter.fail("a")
    now[0] = 10
    limiter.fail("a")
    assert limiter.wait("a") == 50 and limiter.wait("b") == 0
    now[0] = 60.5
    assert limiter.wait("a") == 0  # the first failure left the window


# ----- jobs nobody reads -----

def test_unread_jobs_are_cancelled_and_read_ones_are_not():
    cancelled = []
    sessions = {"e1": "s1"}

    async def cancel(event_id, session):
        cancelled.append((event_id, session))

    async def run(read: str | None):
        jobs = JobWatch(sessions.get, cancel, grace=0.2)
        app = guarded(Guard(GuardSettings(), jobs=jobs))
        scope_headers = [(b"host", b"localhost")]
        body = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive():
            return body.pop(0) if body else await asyncio.sleep(3600)

        async def send(message):
            pass
        await app({"type": "http", "method": "POST", "path": "/gradio_api/call/generate", "headers": scope_headers,
                   "client": ("1.1.1.1", 1), "query_string": b""}, receive, send)
        if read == "call":
            reader = jobs.reader_session("GET", "/gradio_api/call/generate/e1", b"")
        elif read == "queue":
            reader = jobs.reader_session("GET", "/gradio_api/queue/data", b"session_hash=s1")
        else:
            reader = None
        if reader:
            jobs.reader_opened(reader)
        await asyncio.sleep(0.4)
        return jobs.cancelled

    assert run_async(run(None)) == 1 and cancelled == [("e1", "s1")]
    cancelled.clear()
    assert run_async(run("call")) == 0 and run_async(run("queue")) == 0 and cancelled == []


def test_job_submitted_while_its_session_is_being_read_is_not_watched():
    jobs = JobWatch(lambda e: "s1", lambda e, s: asyncio.sleep(0), grace=0.1)

    async def run():
        jobs.reader_opened("s1")
        jobs.submitted("e2")
        jobs.reader_closed("s1")
        await asyncio.sleep(0.2)

    run_async(run())
    assert jobs.cancelled == 0


# ----- placement -----

def test_wrap_outermost_puts_the_guard_around_a_starlette_stack():
    from starlette.applications import Starlette

    app = Starlette()
    guard = make_guard()
    assert wrap_outermost(app, guard) and isinstance(app.middleware_stack, HttpGuardMiddleware)
    assert wrap_outermost(app, guard) and not isinstance(app.middleware_stack.app, HttpGuardMiddleware)
    assert not wrap_outermost(echo_app, guard)


def test_inner_and_outer_guards_handle_a_request_once():
    guard = make_guard(logins=True, login_failures=2)
    app = HttpGuardMiddleware(HttpGuardMiddleware(echo_app, guard=guard), guard=guard)
    assert request(app, method="POST", path="/login", chunks=[b"bad"]).status == 400
    assert request(app, method="POST", path="/login", chunks=[b"bad"]).status == 400  # counted once each
    assert request(app, method="POST", path="/login", chunks=[b"good"]).status == 429
