"""Adding a server a person typed (checked before it is listed) and the status line of a session's server."""

from __future__ import annotations

import re

from app.chat.chat_context import ChatContext
from app.chat.messages import MSG_SERVER_ADDRESS, MSG_SERVER_NOT_ANSWERING, MSG_SERVER_NOT_READY
from app.chat.servers import OWN, Server
from app.core.errors import ChatError, InvalidRequest
from app.deployments.base import DeploymentStatus

TRITON_ADDRESS = re.compile(r"^(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$")
MAX_ADDRESS_CHARS = 300


def add_server(ctx: ChatContext, address: str) -> Server:
    """List the server at `address` (an OpenAI-compatible http(s) URL or a Triton gRPC HOST:PORT) once it answers
    and its model is ready; InvalidRequest saying why not (nothing is listed then)."""
    address = (address or "").strip()
    if not address or len(address) > MAX_ADDRESS_CHARS:
        raise InvalidRequest(MSG_SERVER_ADDRESS)
    if address.startswith(("http://", "https://")):
        server = ctx.openai_server(address)
    elif TRITON_ADDRESS.match(address):
        server = ctx.added_triton(address)
    else:
        raise InvalidRequest(MSG_SERVER_ADDRESS)
    try:
        status = server.deployment.status()
    except ChatError as exc:
        ctx.servers.remove(server.id)
        raise InvalidRequest(MSG_SERVER_NOT_ANSWERING.format(url=address, detail=str(exc))) from None
    if not status.live:
        ctx.servers.remove(server.id)
        raise InvalidRequest(MSG_SERVER_NOT_ANSWERING.format(url=address, detail=status.detail or "no answer."))
    if not status.ready:
        ctx.servers.remove(server.id)
        raise InvalidRequest(MSG_SERVER_NOT_READY.format(url=address, detail=status.detail or status.server))
    return server


def choose_server(ctx: ChatContext, session: str, server_id: str | None) -> Server:
    """`session` talks to `server_id` from now on; a server marked unreachable is asked again first."""
    server = ctx.servers.get(server_id or OWN)
    if server is not None and server.unreachable and server.running():
        ctx.servers.mark_unreachable(server.id, not ctx.view_of(server).deployment.status().live)
    return ctx.servers.choose(session, server_id)


def session_status(ctx: ChatContext, session: str | None) -> tuple[ChatContext, DeploymentStatus, str | None]:
    """The session's view of the context, its server's status, and why it fell back (None when it did not, or was
    told already). A chosen server found down is marked unreachable, and the session is back on the app's own."""
    note = ctx.servers.fallback_note(session)
    view = ctx.for_session(session)
    status = view.deployment.status()
    if not status.live and view.server.id != OWN:
        ctx.servers.mark_unreachable(view.server.id)
        note = ctx.servers.fallback_note(session)
        view = ctx.for_session(session)
        status = view.deployment.status()
    return view, status, note
