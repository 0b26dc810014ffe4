"""Drive an ASGI callable in-process: a request's messages in, the sent messages out (no server)."""

from __future__ import annotations

import asyncio
import json

from tests.threads import run_async  # noqa: F401 - the tests of this folder take it from here


def http_scope(method: str = "GET", path: str = "/", host: str | None = "127.0.0.1:7860",
               headers: dict[str, str] | None = None, client=("10.1.1.1", 5000), query: bytes = b"") -> dict:
    raw = [(b"host", host.encode())] if host is not None else []
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return {"type": "http", "method": method, "path": path, "headers": raw, "client": client,
            "query_string": query}


class Sent:
    """What an ASGI app sent: status, headers (lower-case names), body."""

    def __init__(self, messages: list[dict]):
        self.messages = messages
        start = next((m for m in messages if m["type"] == "http.response.start"), None)
        self.status = start["status"] if start else None
        self.headers = {k.decode().lower(): v.decode() for k, v in (start or {}).get("headers", [])}
        self.body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")

    def json(self):
        return json.loads(self.body)


def call(app, scope: dict, body: bytes = b"") -> Sent:
    """Run one request with `body` in a single chunk; later receive() calls wait (no disconnect)."""
    sent: list[dict] = []

    async def run():
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            if pending:
                return pending.pop(0)
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)

    run_async(run())
    return Sent(sent)
