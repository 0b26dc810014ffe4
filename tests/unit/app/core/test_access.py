"""Who may act (login, launch token, loopback) and the token URL -> cookie middleware."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.core.access import AccessDenied, AccessPolicy, TokenCookieMiddleware, is_loopback
from app.core.messages import MSG_NEED_TOKEN
from setup.workspace import Workspace


def policy(host="127.0.0.1", logins=False) -> AccessPolicy:
    return AccessPolicy(host=host, port=7860, logins=logins, workspace=Workspace(()))


def test_loopback_needs_the_token_from_header_or_cookie():
    p = policy()
    with pytest.raises(AccessDenied, match="launch token"):
        p.check(None, {}, {})
    with pytest.raises(AccessDenied, match="launch token"):
        p.check(None, {"x-launch-token": "wrong"}, {p.cookie: p.token[:-1]})
    p.check(None, {"x-launch-token": p.token}, {})
    p.check(None, {}, {p.cookie: p.token})
    with pytest.raises(AccessDenied):  # another port's cookie does not count
        p.check(None, {}, {"launch_token_7861": p.token})


def test_off_loopback_without_logins_nobody_may_act_even_with_the_token():
    p = policy(host="0.0.0.0")
    with pytest.raises(AccessDenied, match="--auth-file"):
        p.check(None, {"x-launch-token": p.token}, {})


def test_with_logins_a_logged_in_user_may_act_and_nobody_else():
    p = policy(host="0.0.0.0", logins=True)
    p.check("ada", {}, {})
    with pytest.raises(AccessDenied, match="--auth-file"):
        p.check(None, {"x-launch-token": p.token}, {})


def test_tokens_differ_per_launch_and_the_url_carries_it_only_without_logins():
    a, b = policy(), policy()
    assert a.token != b.token and len(a.token) >= 32
    assert a.url("http://127.0.0.1:7860/") == f"http://127.0.0.1:7860/?token={a.token}"
    assert policy(logins=True).url("http://x:1/") == "http://x:1/"


@pytest.mark.parametrize("host,expected", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("localhost", True), ("LOCALHOST.", True), ("::1", True),
    ("[::1]", True), ("0:0:0:0:0:0:0:1", True), ("::1%lo", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("example.com", False), ("localhost.example", False),
    ("", False),
])
def test_is_loopback(host, expected):
    assert is_loopback(host) is expected


def _client(p: AccessPolicy) -> TestClient:
    app = Starlette(routes=[Route("/", lambda r: PlainTextResponse("page")),
                            Route("/x", lambda r: PlainTextResponse("x"))],
                    middleware=[Middleware(TokenCookieMiddleware, policy=p)])
    return TestClient(app, follow_redirects=False)


def test_token_url_sets_a_strict_httponly_cookie_and_drops_the_token_from_the_url():
    p = policy()
    reply = _client(p).get(f"/x?a=1&token={p.token}")
    assert reply.status_code == 303 and reply.headers["location"] == "/x?a=1"
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{p.cookie}={p.token}") and "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_wrong_or_missing_token_just_serves_the_page():
    p = policy()
    for url in ("/?token=nope", "/", "/?token="):
        reply = _client(p).get(url)
        assert reply.status_code == 200 and reply.text == "page" and "set-cookie" not in reply.headers


def test_messages_say_what_to_do():
    assert "?token=" in MSG_NEED_TOKEN and "X-Launch-Token" in MSG_NEED_TOKEN
