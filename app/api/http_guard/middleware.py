"""The guard itself: settings, per-request checks, body limits and timeouts, and its two installations."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.api.http_guard.hosts import LOOPBACK_NAMES, allowed_host_names, host_header_name, origin_name
from app.api.http_guard.jobs import JobWatch
from app.api.http_guard.logins import FailureLimiter
from app.api.http_guard.replies import send_json_error, size_text
from app.api.messages import (
    MSG_GUARD_BAD_HOST,
    MSG_GUARD_BAD_ORIGIN,
    MSG_GUARD_BODY_TIMEOUT,
    MSG_GUARD_BUSY,
    MSG_GUARD_LOGINS,
    MSG_GUARD_NO_HOST,
)
from app.core.constants import (
    BODY_STALL_SECONDS,
    LARGE_BODY_BYTES,
    LARGE_BODY_SLOTS,
    LOGIN_FAILURES_ALLOWED,
    LOGIN_WINDOW_SECONDS,
    MAX_REQUEST_BODY_BYTES,
)

LOG = logging.getLogger(__name__)
HANDLED = "app.api.http_guard"  # scope key: an outer guard already handled this request


@dataclass(frozen=True)
class GuardSettings:
    """What the guard allows. `body_limits` maps exact paths (a trailing / is ignored) to byte limits."""

    bind_host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()
    body_limits: Mapping[str, int] = field(default_factory=dict)
    default_body_limit: int = MAX_REQUEST_BODY_BYTES
    body_stall_seconds: float = BODY_STALL_SECONDS
    large_body_bytes: int = LARGE_BODY_BYTES
    large_body_slots: int = LARGE_BODY_SLOTS
    logins: bool = False  # count failed logins (the app has --auth-file)
    # path (a prefix when it ends in /) -> the statuses that mean a failed login there
    login_routes: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: {"/login": (400, 401), "/v1/": (401,)})
    login_failures: int = LOGIN_FAILURES_ALLOWED
    login_window_seconds: float = LOGIN_WINDOW_SECONDS


class Guard:
    """The decisions and the shared state (login failures, large-body slots, job watch)."""

    def __init__(self, settings: GuardSettings, jobs: JobWatch | None = None,
                 host_names: frozenset[str] | None = None):
        self.settings = settings
        self.jobs = jobs
        self.host_names = host_names if host_names is not None else allowed_host_names(
            settings.bind_host, settings.allowed_hosts)
        self.logins = FailureLimiter(settings.login_failures, settings.login_window_seconds)
        self._limits = {path.rstrip("/") or "/": limit for path, limit in settings.body_limits.items()}
        self.large_in_use = 0

    def describe_hosts(self) -> str:
        shown = sorted(self.host_names, key=lambda n: (n not in LOOPBACK_NAMES, n))[:6]
        return ", ".join(f"[{n}]" if ":" in n else n for n in shown) + (", ..." if len(self.host_names) > 6 else "")

    def body_limit(self, path: str) -> int:
        return self._limits.get(path.rstrip("/") or "/", self.settings.default_body_limit)

    def login_statuses(self, path: str) -> tuple[int, ...] | None:
        if not self.settings.logins:
            return None
        for route, statuses in self.settings.login_routes.items():
            if (path.startswith(route) if route.endswith("/") else path.rstrip("/") == route):
                return statuses
        return None

    def take_large_slot(self) -> bool:
        if self.large_in_use >= self.settings.large_body_slots:
            return False
        self.large_in_use += 1
        return True

    def release_large_slot(self) -> None:
        self.large_in_use -= 1


class _Exchange:
    """One request as the guard sees it: the body as it arrives, the response status, the refusal."""

    def __init__(self, guard: Guard, receive, send, limit: int, capture: bool):
        self.guard, self._receive, self._send, self.limit = guard, receive, send, limit
        self.body_done = False
        self.received = 0
        self.large = False
        self.answered = False  # the guard answered; whatever the app sends after that is dropped
        self.gone = False  # the client hung up while its body was arriving
        self.started = False
        self.status: int | None = None
        self.captured: bytearray | None = bytearray() if capture else None

    async def refuse(self, status: int, message: str, kind: str = "invalid_request_error",
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> dict:
        """Answer in JSON (if no response started yet), close the connection, and tell the app the client left."""
        if not self.answered and not self.started:
            self.status = status
            await send_json_error(self._send, status, message, kind, headers, close=True)
        self.answered = True
        return {"type": "http.disconnect"}

    async def receive(self) -> dict:
        if self.answered:
            return {"type": "http.disconnect"}
        if self.body_done:
            return await self._receive()
        try:
            async with asyncio.timeout(self.guard.settings.body_stall_seconds):
                message = await self._receive()
        except TimeoutError:
            return await self.refuse(408, MSG_GUARD_BODY_TIMEOUT.format(
                seconds=self.guard.settings.body_stall_seconds))
        if message["type"] == "http.disconnect":
            self.gone = self.body_done = True
            return message
        self.received += len(message.get("body") or b"")
        if self.received > self.limit:
            return await self.refuse(413, size_text(self.limit))
        if not self.large and self.received > self.guard.settings.large_body_bytes:
            if not self.guard.take_large_slot():
                return await self.refuse(503, MSG_GUARD_BUSY.format(limit=self.guard.settings.large_body_slots),
                                         "server_error", [(b"retry-after", b"1")])
            self.large = True
        if not message.get("more_body", False):
            self.body_done = True
        return message

    async def send(self, message: dict) -> None:
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
            self.status = message["status"]
            if self.status != 200 or any(k.lower() == b"content-encoding" for k, _ in message.get("headers", ())):
                self.captured = None
        elif message["type"] == "http.response.body" and self.captured is not None:
            self.captured += message.get("body", b"")
            if len(self.captured) > 4096:
                self.captured = None
        await self._send(message)


class HttpGuardMiddleware:
    """ASGI middleware applying a `Guard` (see the module docstring)."""

    def __init__(self, app, guard: Guard):
        self.app = app
        self.guard = guard

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get(HANDLED):
            await self.app(scope, receive, send)
            return
        scope[HANDLED] = True
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), value)
        refusal = self._refusal(headers)
        if refusal is not None:
            status, message, kind = refusal
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            else:  # the connection closes: a body it may carry is not read
                await send_json_error(send, status, message, kind, close=True)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._http(scope, receive, send, headers)

    def _refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str, str] | None:
        guard = self.guard
        raw_host = headers.get(b"host")
        if raw_host is None:
            return 400, MSG_GUARD_NO_HOST, "invalid_request_error"
        host_text = raw_host.decode("latin-1")
        name = host_header_name(host_text)
        if name is None or name not in guard.host_names:
            shown = (name or host_text)[:100]
            return 421, MSG_GUARD_BAD_HOST.format(host=shown, allowed=guard.describe_hosts(),
                                                  name=shown if name else "NAME"), "invalid_request_error"
        origin = headers.get(b"origin")
        if origin is not None:
            origin_text = origin.decode("latin-1")
            if origin_name(origin_text) not in guard.host_names:
                return 403, MSG_GUARD_BAD_ORIGIN.format(origin=origin_text[:100], allowed=guard.describe_hosts()), \
                    "permission_error"
        return None

    async def _http(self, scope, receive, send, headers: dict[bytes, bytes]) -> None:
        guard = self.guard
        method, path = scope["method"], scope["path"]
        limit = guard.body_limit(path)
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await send_json_error(send, 413, size_text(limit), "invalid_request_error", close=True)
            return
        client = (scope.get("client") or ("unknown",))[0]
        login_statuses = guard.login_statuses(path)
        if login_statuses is not None:
            wait = guard.logins.wait(client)
            if wait:
                await send_json_error(send, 429, MSG_GUARD_LOGINS.format(
                    client=client, limit=guard.settings.login_failures,
                    window=guard.settings.login_window_seconds, wait=wait),
                    "rate_limit_error", [(b"retry-after", str(wait).encode())])
                return
        jobs = guard.jobs
        submit = jobs is not None and jobs.is_submit(method, path)
        reader = jobs.reader_session(method, path, scope.get("query_string", b"")) if jobs is not None else None
        exchange = _Exchange(guard, receive, send, limit, capture=submit)
        if declared.isdigit() and int(declared) > guard.settings.large_body_bytes:
            if not guard.take_large_slot():
                await send_json_error(send, 503, MSG_GUARD_BUSY.format(limit=guard.settings.large_body_slots),
                                      "server_error", [(b"retry-after", b"1")], close=True)
                return
            exchange.large = True
        if reader is not None:
            jobs.reader_opened(reader)
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except Exception as exc:
            if not (exchange.answered or exchange.gone):
                raise
            # the guard answered (413/408/...) or the client left mid-body: the app's complaint is expected
            LOG.debug("%s %s ended after %s: %s", method, path,
                      "the guard's answer" if exchange.answered else "the client left", type(exc).__name__)
        finally:
            if exchange.large:
                guard.release_large_slot()
            if reader is not None:
                jobs.reader_closed(reader)
        if login_statuses is not None and exchange.status in login_statuses:
            guard.logins.fail(client)
        if submit and exchange.captured:
            try:
                event_id = json.loads(bytes(exchange.captured)).get("event_id")
            except (ValueError, AttributeError):
                event_id = None
            if isinstance(event_id, str):
                jobs.submitted(event_id)


def wrap_outermost(app, guard: Guard) -> bool:
    """Put the guard around a Starlette app's whole middleware stack (outside Gradio's CORS middleware).

    Starlette builds the stack on the first request; it is built here if it is not yet. Returns False
    when the app has no such stack (then only the inner guard applies)."""
    if not hasattr(app, "middleware_stack"):
        return False
    stack = app.middleware_stack
    if stack is None:
        stack = app.build_middleware_stack()
    if isinstance(stack, HttpGuardMiddleware):
        return True
    app.middleware_stack = HttpGuardMiddleware(stack, guard=guard)
    return True


def app_middleware(guard: Guard, policy) -> list:
    """The middleware list for the web server: the guard first, then the launch-token cookie."""
    from starlette.middleware import Middleware

    from app.core.access import TokenCookieMiddleware

    return [Middleware(HttpGuardMiddleware, guard=guard), Middleware(TokenCookieMiddleware, policy=policy)]
