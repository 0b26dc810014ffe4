"""app/api/http_guard/middleware.py: the Guard's per-route decisions, WebSocket and lifespan scopes, large-body
slots, which submit replies start a job watch, and the middleware list the web server installs (run through
Starlette's TestClient in-process). The end-to-end refusals are in tests/unit/app/api/test_http_guard.py."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.api.http_guard.jobs import JobWatch
from app.api.http_guard.middleware import Guard, GuardSettings, HttpGuardMiddleware, app_middleware
from app.core.access import AccessPolicy
from setup.workspace import Workspace
from tests.unit.app.api.http_guard.asgi_driver import call, http_scope, run_async


def guard(**settings) -> Guard:
    return Guard(GuardSettings(**settings))


# ----- decisions -----

def test_body_limits_ignore_a_trailing_slash_on_either_side():
    g = guard(body_limits={"/v1/chat/completions/": 100, "/": 7}, default_body_limit=50)
    assert g.body_limit("/v1/chat/completions") == 100
    assert g.body_limit("/v1/chat/completions/") == 100
    assert g.body_limit("/") == 7
    assert g.body_limit("/v1/chat") == 50  # exact paths, not prefixes


def test_login_routes_match_exactly_or_by_prefix_and_only_with_logins():
    g = guard(logins=True)
    assert g.login_statuses("/login") == (400, 401) and g.login_statuses("/login/") == (400, 401)
    assert g.login_statuses("/v1/models") == (401,)
    assert g.login_statuses("/login/extra") is None and g.login_statuses("/v1") is None
    assert guard(logins=False).login_statuses("/login") is None


def test_described_hosts_put_loopback_first_bracket_ipv6_and_stop_at_six():
    g = Guard(GuardSettings(), host_names=frozenset({"zeta.lan", "::1", "alpha.lan", "fe80::2"}))
    assert g.describe_hosts() == "[::1], alpha.lan, [fe80::2], zeta.lan"
    many = Guard(GuardSettings(), host_names=frozenset(f"h{i}.lan" for i in range(8)))
    assert many.describe_hosts().count(",") == 6 and many.describe_hosts().endswith(", ...")


def test_large_body_slots_are_counted():
    g = guard(large_body_slots=2)
    assert g.take_large_slot() and g.take_large_slot() and not g.take_large_slot()
    g.release_large_slot()
    assert g.take_large_slot() and g.large_in_use == 2


# ----- scopes other than plain HTTP -----

def run_scope(app, scope: dict) -> list[dict]:
    sent: list[dict] = []

    async def run():
        async def receive():
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)

    run_async(run())
    return sent


async def accepting_app(scope, receive, send):
    await send({"type": "websocket.accept"} if scope["type"] == "websocket" else {"type": "seen", "scope": scope["type"]})


def test_a_websocket_from_a_foreign_page_is_closed_with_policy_violation():
    scope = {"type": "websocket", "path": "/ws", "client": ("1.2.3.4", 1),
             "headers": [(b"host", b"127.0.0.1:7860"), (b"origin", b"http://evil.example")]}
    sent = run_scope(HttpGuardMiddleware(accepting_app, guard()), scope)
    assert len(sent) == 1 and sent[0]["type"] == "websocket.close" and sent[0]["code"] == 1008
    assert "evil.example" in sent[0]["reason"] and len(sent[0]["reason"]) <= 120


def test_a_websocket_of_the_apps_own_page_is_passed_on():
    scope = {"type": "websocket", "path": "/ws", "client": ("1.2.3.4", 1),
             "headers": [(b"host", b"localhost:7860"), (b"origin", b"http://localhost:7860")]}
    assert run_scope(HttpGuardMiddleware(accepting_app, guard()), scope) == [{"type": "websocket.accept"}]


def test_lifespan_passes_through_without_host_checks():
    sent = run_scope(HttpGuardMiddleware(accepting_app, guard()), {"type": "lifespan"})
    assert sent == [{"type": "seen", "scope": "lifespan"}]


# ----- large declared bodies -----

async def echo_length(scope, receive, send):
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


def test_a_declared_large_body_holds_a_slot_only_while_it_is_served():
    g = guard(large_body_bytes=10, large_body_slots=1)
    app = HttpGuardMiddleware(echo_length, g)
    reply = call(app, http_scope("POST", "/x", headers={"content-length": "20"}), b"y" * 20)
    assert reply.status == 200 and reply.body == b"20" and g.large_in_use == 0


def test_no_large_body_slot_left_refuses_before_reading():
    g = guard(large_body_bytes=10, large_body_slots=0)
    app = HttpGuardMiddleware(echo_length, g)
    reply = call(app, http_scope("POST", "/x", headers={"content-length": "20"}), b"y" * 20)
    assert reply.status == 503 and reply.headers["retry-after"] == "1" and reply.headers["connection"] == "close"
    assert call(app, http_scope("POST", "/x", headers={"content-length": "10"}), b"y" * 10).status == 200


# ----- logins on /v1 -----

def status_app(status: int):
    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
    return app


def test_only_the_login_statuses_of_a_route_count_as_failures():
    g = guard(logins=True, login_failures=1)
    call(HttpGuardMiddleware(status_app(400), g), http_scope("GET", "/v1/models"))  # 400 is no login failure on /v1
    assert g.logins.wait("10.1.1.1") == 0
    call(HttpGuardMiddleware(status_app(401), g), http_scope("GET", "/v1/models"))
    assert g.logins.wait("10.1.1.1") > 0


# ----- which submit replies start a job watch -----

def submit_app(status: int = 200, body: bytes | None = None, encoding: bytes | None = None):
    payload = body if body is not None else json.dumps({"event_id": "e1"}).encode()
    headers = [(b"content-encoding", encoding)] if encoding else []

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": gzip.compress(payload) if encoding else payload})
    return app


@pytest.mark.parametrize("app, watched", [
    (submit_app(), True),
    (submit_app(status=422), False),
    (submit_app(body=json.dumps({"event_id": "e1", "pad": "x" * 5000}).encode()), False),  # too long to keep
    (submit_app(body=b"not json"), False),
    (submit_app(body=b"[1, 2]"), False),
    (submit_app(body=json.dumps({"event_id": 7}).encode()), False),
    (submit_app(encoding=b"gzip"), False),
])
def test_a_job_is_watched_only_from_a_plain_200_reply_with_an_event_id(app, watched):
    cancelled: list = []

    async def cancel(event_id, session):
        cancelled.append(event_id)

    jobs = JobWatch(lambda event: "s1", cancel, grace=0.01)

    async def run():
        async def receive():
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message):
            pass

        await HttpGuardMiddleware(app, Guard(GuardSettings(), jobs=jobs))(
            http_scope("POST", "/gradio_api/queue/join"), receive, send)
        await asyncio.sleep(0.1)

    run_async(run())
    assert cancelled == (["e1"] if watched else [])


def test_a_reader_request_marks_its_session_read_while_it_runs():
    cancelled: list = []

    async def cancel(event_id, session):
        cancelled.append(event_id)

    jobs = JobWatch(lambda event: "s7", cancel, grace=0.02)

    async def reader(scope, receive, send):
        jobs.submitted("during")  # its session is being read now: not watched
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def run():
        async def receive():
            await asyncio.sleep(3600)

        async def send(message):
            pass

        app = HttpGuardMiddleware(reader, Guard(GuardSettings(), jobs=jobs))
        await app(http_scope("GET", "/gradio_api/queue/data", query=b"session_hash=s7"), receive, send)
        jobs.submitted("after")  # the reader has gone
        await asyncio.sleep(0.1)

    run_async(run())
    assert cancelled == ["after"]


# ----- the installed middleware list, through Starlette -----

def test_app_middleware_guards_first_then_takes_the_launch_token(tmp_path: Path):
    policy = AccessPolicy(host="127.0.0.1", port=7860, logins=False, workspace=Workspace((tmp_path,)))
    g = guard(allowed_hosts=("testserver",))
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("page"))],
                    middleware=app_middleware(g, policy))
    with TestClient(app, base_url="http://testserver") as client:
        assert client.get("/").text == "page"
        token = client.get(f"/?token={policy.token}&tab=chat", follow_redirects=False)
        assert token.status_code == 303 and token.headers["location"] == "/?tab=chat"
        assert token.headers["set-cookie"].startswith(f"{policy.cookie}={policy.token}")
        foreign = client.get(f"/?token={policy.token}", headers={"host": "evil.example"}, follow_redirects=False)
        assert foreign.status_code == 421 and "set-cookie" not in foreign.headers
        cross = client.post("/", headers={"origin": "http://evil.example"})
        assert cross.status_code == 403 and cross.json()["error"]["type"] == "permission_error"
