"""app/api/http_guard/replies.py: the JSON error body, the response messages it sends, sizes in words."""

from __future__ import annotations

import json

import pytest

from app.api.http_guard.replies import error_json, send_json_error, size_text
from tests.unit.app.api.http_guard.asgi_driver import Sent, run_async


def test_error_json_is_the_openai_error_shape():
    assert json.loads(error_json("No.", "permission_error")) == {
        "error": {"message": "No.", "type": "permission_error", "param": None, "code": None}}


def send_and_collect(**kwargs) -> Sent:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    run_async(send_json_error(send, **kwargs))
    return Sent(sent)


def test_sent_error_has_a_correct_length_and_is_not_cached():
    reply = send_and_collect(status=413, message="Too big.", kind="invalid_request_error")
    assert reply.status == 413
    assert reply.json()["error"] == {"message": "Too big.", "type": "invalid_request_error", "param": None,
                                     "code": None}
    assert int(reply.headers["content-length"]) == len(reply.body)
    assert reply.headers["content-type"] == "application/json" and reply.headers["cache-control"] == "no-store"
    assert "connection" not in reply.headers
    assert reply.messages[-1]["more_body"] is False


def test_sent_error_can_close_the_connection_and_carry_extra_headers():
    reply = send_and_collect(status=503, message="Busy.", kind="server_error", headers=[(b"retry-after", b"1")],
                             close=True)
    assert reply.headers["connection"] == "close" and reply.headers["retry-after"] == "1"


@pytest.mark.parametrize("limit, text", [
    (2 * 2**20, "The request body is larger than 2 MB."),
    (2**20, "The request body is larger than 1 MB."),
    (2**20 - 1, "The request body is larger than 1023.9 KB."),  # rounded down: a refused body is above it
    (3 * 2**19, "The request body is larger than 1.5 MB."),
    (5 * 2**19, "The request body is larger than 2.5 MB."),
    (int(1.37 * 2**20), "The request body is larger than 1.3 MB."),
    (1536, "The request body is larger than 1.5 KB."),
    (64 * 1024, "The request body is larger than 64 KB."),
    (100, "The request body is larger than 1 KB."),  # never "0 KB"
])
def test_size_text(limit, text):
    assert size_text(limit) == text
