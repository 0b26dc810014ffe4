"""The guard in front of everything served on the app's port (plain ASGI: no Gradio, no FastAPI).

- **Host names**: only requests whose `Host` names this app are served: its bound address; localhost,
  127.0.0.1 and [::1] when it is bound to loopback; the machine's names and addresses when it is bound
  to every address (0.0.0.0 / ::); and the names given with `--allowed-hosts`. A web page on another
  domain that points its name at this machine (DNS rebinding) gets 421.
- **Origins**: a request that carries an `Origin` (browsers send one on every cross-site request and on
  every POST) must come from a page on one of those host names; others get 403, and since the guard
  runs before Gradio's CORS middleware, no answer to a foreign page carries Access-Control-Allow-Origin.
- **Bodies**: each route has a body limit counted as the bytes arrive (a Content-Length above it is
  refused before reading); a body that stalls is answered 408 and the connection closed; bodies above
  `large_body_bytes` hold one of a few slots while they arrive, so many huge uploads at once get 503
  instead of the app's memory. A client that hangs up mid-body ends its request quietly (no traceback).
- **Logins** (with --auth-file): failed logins (Gradio's POST /login, 401s of /v1) are counted per client
  address; past the limit in the window the address gets 429 with Retry-After.
- **Unread jobs**: a Gradio job (POST /gradio_api/call/<api> or /queue/join) whose result nobody starts
  reading within a grace time is cancelled through the callbacks the app gives `JobWatch`.

Every refusal is JSON, `{"error": {"message": ..., "type": ...}}`, with one plain sentence.

Starlette puts middleware given to the app *inside* Gradio's CORS and compression middleware; the app
installs the guard there (so it is active from the first request) and also wraps the finished stack
(`wrap_outermost`), sharing one `Guard`. Whichever instance sees a request first handles it; the other
passes it through.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import re
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from app.core.constants import (
    BODY_STALL_SECONDS,
    LARGE_BODY_BYTES,
    LARGE_BODY_SLOTS,
    LOGIN_FAILURES_ALLOWED,
    LOGIN_WINDOW_SECONDS,
    MAX_REQUEST_BODY_BYTES,
    MSG_GUARD_BAD_HOST,
    MSG_GUARD_BAD_ORIGIN,
    MSG_GUARD_BODY_TIMEOUT,
    MSG_GUARD_BODY_TOO_LARGE,
    MSG_GUARD_BODY_TOO_LARGE_KB,
    MSG_GUARD_BUSY,
    MSG_GUARD_LOGINS,
    MSG_GUARD_NO_HOST,
    UNREAD_JOB_GRACE_SECONDS,
)

LOG = logging.getLogger(__name__)
HANDLED = "app.api.http_guard"  # scope key: an outer guard already handled this request
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("", "0.0.0.0", "::", "[::]")
_NAME = re.compile(r"[a-z0-9_.\-]+|[0-9a-f:.]+")
_MAX_CLIENTS_TRACKED = 10_000


# ----- host names -----

def _normal(name: str) -> str:
    """A host name or address in one spelling: lower case, no brackets or trailing dot, IPv6 compressed."""
    name = name.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name.split("%")[0]).compressed
    except ValueError:
        return name


def host_header_name(value: str) -> str | None:
    """The host name of a Host header ('Example.com:7860' -> 'example.com', '[::1]:80' -> '::1'); None
    when it is not a host name at all."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[1:end], value[end + 1:]
        if end < 0 or (rest and not re.fullmatch(r":\d{1,5}", rest)):
            return None
    elif value.count(":") == 1:
        name, port = value.split(":")
        if not re.fullmatch(r"\d{1,5}", port):
            return None
    else:
        name = value
    name = name.rstrip(".")
    return _normal(name) if name and _NAME.fullmatch(name) else None


def origin_name(origin: str) -> str | None:
    """The host name of an Origin header; None for 'null' and anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not name:
        return None
    return _normal(name)


def is_loopback(host: str) -> bool:
    name = _normal(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def machine_names() -> set[str]:
    """This machine's host name and the addresses of its network interfaces (for a 0.0.0.0 bind)."""
    names = {socket.gethostname()}
    try:
        import psutil  # noqa: PLC0415 - optional: every interface's addresses when it is installed

        for addresses in psutil.net_if_addrs().values():
            names.update(a.address for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6))
    except Exception:  # noqa: BLE001 - fall back to what the resolver and the routing table say
        pass
    try:
        names.update(str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:  # the address this machine would send from (a UDP connect sends nothing)
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))
                names.add(s.getsockname()[0])
        except OSError:
            pass
    return {_normal(n) for n in names if n}


def allowed_host_names(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a request may name: see the module docstring."""
    names = {_normal(bind_host)} if bind_host not in WILDCARDS else set()
    if bind_host in WILDCARDS:
        names.update(machine_names())
        names.update(LOOPBACK_NAMES)
    elif is_loopback(bind_host):
        names.update(LOOPBACK_NAMES)
    names.update(_normal(n) for n in extra if n)
    return frozenset(names)


# ----- replies -----

def error_json(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


async def send_json_error(send, status: int, message: str, kind: str,
                          headers: Iterable[tuple[bytes, bytes]] = (), close: bool = False) -> None:
    body = error_json(message, kind)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), *headers]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def size_text(limit: int) -> str:
    if limit >= 1024 * 1024:
        return MSG_GUARD_BODY_TOO_LARGE.format(limit_mb=limit / 2**20)
    return MSG_GUARD_BODY_TOO_LARGE_KB.format(limit_kb=max(1, limit / 1024))


# ----- failed logins -----

class FailureLimiter:
    """At most `allowed` failures per key within `window` seconds; then the key waits."""

    def __init__(self, allowed: int, window: float, clock: Callable[[], float] = time.monotonic):
        self.allowed, self.window, self.clock = allowed, window, clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        cutoff = self.clock() - self.window
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def wait(self, key: str) -> int:
        """Seconds until `key` may try again (0: now)."""
        times = self._recent(key)
        if times is None or len(times) < self.allowed:
            return 0
        return max(1, math.ceil(times[-self.allowed] + self.window - self.clock()))

    def fail(self, key: str) -> None:
        times = self._recent(key)
        if times is None:
            if len(self._failures) >= _MAX_CLIENTS_TRACKED:  # forget the longest-known address
                del self._failures[next(iter(self._failures))]
            times = self._failures[key] = deque(maxlen=self.allowed)
        times.append(self.clock())


# ----- jobs nobody reads -----

class JobWatch:
    """Cancels queue jobs whose result nobody starts reading within `grace` seconds.

    The guard reports each new job (the `event_id` answered to POST .../call/<api> or .../queue/join)
    and each reader (GET .../call/<api>/<event_id>, GET .../queue/data?session_hash=...). A reader reads
    every job of its session. `session_of(event_id)` gives a job's session (None once it has ended);
    `cancel(event_id, session)` stops it. The callbacks come from the app, which knows Gradio's queue.
    """

    def __init__(self, session_of: Callable[[str], str | None],
                 cancel: Callable[[str, str], Awaitable[None]], grace: float = UNREAD_JOB_GRACE_SECONDS,
                 prefix: str = "/gradio_api"):
        self.session_of, self.cancel, self.grace = session_of, cancel, grace
        self._submit = re.compile(rf"{re.escape(prefix)}/(?:queue/join|call/(?:v2/)?[^/]+)/?")
        self._read_call = re.compile(rf"{re.escape(prefix)}/call/(?:v2/)?[^/]+/(?P<event>[^/]+)/?")
        self._read_queue = f"{prefix}/queue/data"
        self._pending: dict[str, str] = {}  # event id -> session, jobs nobody reads yet
        self._by_session: dict[str, set[str]] = {}
        self._readers: dict[str, int] = {}  # session -> readers connected now
        self._tasks: set[asyncio.Task] = set()
        self.cancelled = 0

    def is_submit(self, method: str, path: str) -> bool:
        return method == "POST" and self._submit.fullmatch(path) is not None

    def reader_session(self, method: str, path: str, query: bytes) -> str | None:
        """The session a GET reads, or None when it is not a reader."""
        if method != "GET":
            return None
        if path.rstrip("/") == self._read_queue:
            values = parse_qs(query.decode("latin-1")).get("session_hash")
            return values[0] if values else None
        match = self._read_call.fullmatch(path)
        if match is None:
            return None
        event = match.group("event")
        return self._pending.get(event) or self.session_of(event) or event

    def submitted(self, event_id: str) -> None:
        session = self.session_of(event_id)
        if session is None or self._readers.get(session):
            return  # already over, or read by a reader that is connected now
        self._pending[event_id] = session
        self._by_session.setdefault(session, set()).add(event_id)
        asyncio.get_running_loop().call_later(self.grace, self._expire, event_id)

    def reader_opened(self, session: str) -> None:
        self._readers[session] = self._readers.get(session, 0) + 1
        for event_id in self._by_session.pop(session, ()):
            self._pending.pop(event_id, None)

    def reader_closed(self, session: str) -> None:
        left = self._readers.get(session, 0) - 1
        if left > 0:
            self._readers[session] = left
        else:
            self._readers.pop(session, None)

    def _expire(self, event_id: str) -> None:
        session = self._pending.pop(event_id, None)
        if session is None:
            return
        events = self._by_session.get(session)
        if events is not None:
            events.discard(event_id)
            if not events:
                del self._by_session[session]
        LOG.info("cancelling job %s: nobody read its result within %.0f s", event_id, self.grace)
        self.cancelled += 1
        task = asyncio.ensure_future(self.cancel(event_id, session))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            LOG.error("cancelling an unread job failed", exc_info=task.exception())


# ----- the guard -----

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
