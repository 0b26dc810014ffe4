"""What the request path needs from the app's context: ChatContext, the attributes and methods the chat's functions
(turns, reply_run, compare, server_choice) read. app.context.AppContext provides them; it sits above app.chat (it
holds the chat's live figures, outbox, adapter checks and server list), so the chat names this protocol instead of
importing it."""

from __future__ import annotations

from typing import Protocol

from app.chat.adapter_check import AdapterChecks
from app.chat.live import LiveReplies
from app.chat.outbox import Outbox
from app.chat.servers import Server, ServerList
from app.deployments.base import Deployment


class ChatSettings(Protocol):
    """The app config's fields the request path reads (app.context.AppConfig)."""

    system_prompt: str


class SessionStreams(Protocol):
    """The stream each browser session is reading, so Stop can cancel it (app.context.ActiveStreams)."""

    def register(self, session: str, stream) -> None: ...

    def unregister(self, session: str, stream) -> None: ...


class ChatContext(Protocol):
    """The app's context as the request path sees it (app.context.AppContext, or its view for one session)."""

    config: ChatSettings
    deployment: Deployment
    adapter_checks: AdapterChecks
    active: SessionStreams
    live: LiveReplies
    outbox: Outbox
    servers: ServerList

    @property
    def server(self) -> Server: ...

    def for_session(self, session: str | None) -> ChatContext: ...

    def view_of(self, server: Server) -> ChatContext: ...

    def added_triton(self, url: str) -> Server: ...

    def openai_server(self, url: str, api_key_file: str | None = None) -> Server: ...
