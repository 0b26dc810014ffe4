"""Who may make the server run programs or write files: a login, or on loopback the per-launch token.

The token is made at start and printed in the console as part of the UI's URL (`/?token=...`), the way
notebook servers do. Opening that URL stores it in a cookie (HttpOnly, SameSite=Strict, named per port)
and redirects to the plain URL; scripts send it as the `X-Launch-Token` header. Handlers that build,
launch, write repositories, add or remove adapters, or run benchmarks call `AccessPolicy.check` themselves:
hiding a button is not protection.

Imports: app.core.errors, setup.workspace; no Gradio, no FastAPI (the middleware speaks plain ASGI).
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from app.core.errors import ChatError
from app.core.messages import MSG_NEED_LOGIN, MSG_NEED_TOKEN
from setup.workspace import Workspace

TOKEN_HEADER = "x-launch-token"
TOKEN_QUERY = "token"



class AccessDenied(ChatError):
    """The caller may not run this action; the message says what would allow it."""


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback, in any spelling: 'localhost' (any case, trailing dot),
    127.0.0.0/8, '::1' with or without brackets or a zone. The one loopback rule of the app."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.split("%")[0]).is_loopback
    except ValueError:
        return False


def cookie_name(port: int) -> str:
    """Cookies ignore ports, so each app port gets its own cookie."""
    return f"launch_token_{port}"


@dataclass
class AccessPolicy:
    """The launch token, whether logins are configured, and the workspace roots."""

    host: str
    port: int
    logins: bool
    workspace: Workspace
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def cookie(self) -> str:
        return cookie_name(self.port)

    def token_ok(self, value: str | None) -> bool:
        return bool(value) and secrets.compare_digest(value.encode(), self.token.encode())

    def check(self, username: str | None, headers: dict[str, str], cookies: dict[str, str]) -> None:
        """Return when the caller may act; AccessDenied with the reason otherwise.

        `headers` keys are lower case. A logged-in user (--auth-file) may act; without logins, only on a
        loopback address and only with the launch token.
        """
        if self.logins:
            if username:
                return
            raise AccessDenied(MSG_NEED_LOGIN.format(host=self.host))
        if not is_loopback(self.host):
            raise AccessDenied(MSG_NEED_LOGIN.format(host=self.host))
        if self.token_ok(headers.get(TOKEN_HEADER)) or self.token_ok(cookies.get(self.cookie)):
            return
        raise AccessDenied(MSG_NEED_TOKEN)

    def refusal(self, username: str | None, headers: dict[str, str], cookies: dict[str, str]) -> str | None:
        """None when the caller may act; otherwise why not, in a sentence (`headers` in any case)."""
        try:
            self.check(username, {k.lower(): v for k, v in headers.items()}, cookies)
        except AccessDenied as exc:
            return str(exc)
        return None

    def url(self, base: str) -> str:
        """The URL to print at start: with the token when it is what grants access."""
        return base if self.logins else f"{base}?{TOKEN_QUERY}={self.token}"


class TokenCookieMiddleware:
    """ASGI: `GET ...?token=T` with the right token sets the cookie and redirects to the URL without it."""

    def __init__(self, app, policy: AccessPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and scope.get("query_string"):
            query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            token = next((v for k, v in query if k == TOKEN_QUERY), None)
            if token is not None and self.policy.token_ok(token):
                rest = urlencode([(k, v) for k, v in query if k != TOKEN_QUERY])
                location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
                cookie = SimpleCookie()
                cookie[self.policy.cookie] = self.policy.token
                morsel = cookie[self.policy.cookie]
                morsel["httponly"], morsel["samesite"], morsel["path"] = True, "Strict", "/"
                await send({"type": "http.response.start", "status": 303, "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", morsel.OutputString().encode("latin-1")),
                    (b"cache-control", b"no-store"), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
