"""The servers the app can talk to and which one each browser session chose.

The app's own deployment is always listed first; servers launched from the Build page and addresses a person
added follow. A session's choice is its own (other sessions keep theirs) and can be undone; a server that
stopped (its process is gone) or could not be reached is marked so, and the sessions that chose it fall back
to the app's own, each told once why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from app.adapters.registry import AdapterRegistry
from app.chat.adapter_check import AdapterChecks
from app.chat.messages import (
    MSG_SERVER_FELL_BACK,
    MSG_SERVER_MARK_STOPPED,
    MSG_SERVER_MARK_UNREACHABLE,
    MSG_SERVER_NOT_LISTED,
    MSG_SERVER_STOPPED,
)
from app.core.errors import InvalidRequest
from app.deployments.base import Deployment

OWN = "app"  # the id of the deployment the app started with
BUILD, ADDED = "build", "added"  # where the other servers come from


def _always() -> bool:
    return True


@dataclass
class Server:
    """One deployment the chat can talk to, with what a page needs of it: its config, adapters and checks."""

    id: str
    label: str
    origin: str
    config: object  # the AppConfig the deployment was made from (its kind, model, adapters folder)
    deployment: Deployment
    adapters: AdapterRegistry
    adapter_checks: AdapterChecks
    running: Callable[[], bool] = field(default=_always)  # False once a process the app launched is gone
    unreachable: bool = False  # its last status read found nothing listening

    @property
    def usable(self) -> bool:
        return self.running() and not self.unreachable

    @property
    def shown(self) -> str:
        """The picker's entry: the label, marked when the server stopped or could not be reached."""
        if not self.running():
            return self.label + MSG_SERVER_MARK_STOPPED
        return self.label + (MSG_SERVER_MARK_UNREACHABLE if self.unreachable else "")


class ServerList:
    """The listed servers (the app's own first) and each browser session's choice."""

    def __init__(self, own: Server):
        self._lock = threading.Lock()
        self._servers: dict[str, Server] = {own.id: own}
        self._own = own.id
        self._chosen: dict[str, str] = {}  # session -> server id
        self._notes: dict[str, str] = {}  # session -> why it fell back, told once

    @property
    def own(self) -> Server:
        return self._servers[self._own]

    def listed(self) -> list[Server]:
        with self._lock:
            return list(self._servers.values())

    def get(self, server_id: str) -> Server | None:
        with self._lock:
            return self._servers.get(server_id)

    def add(self, server: Server) -> Server:
        """List `server` (replacing one of the same id, whose choosers move to the new one)."""
        with self._lock:
            self._servers[server.id] = server
        return server

    def remove(self, server_id: str) -> None:
        """Take `server_id` off the list (never the app's own); sessions that chose it fall back."""
        with self._lock:
            if server_id != self._own:
                self._servers.pop(server_id, None)

    def usable(self, server_id: str | None) -> Server:
        """The listed server `server_id` (None: the app's own); InvalidRequest when it is not listed or cannot be
        used now."""
        server = self.get(server_id or self._own)
        if server is None:
            raise InvalidRequest(MSG_SERVER_NOT_LISTED.format(server=server_id,
                                                              listed=", ".join(s.id for s in self.listed())))
        if not server.usable:
            raise InvalidRequest(MSG_SERVER_STOPPED.format(server=server.shown))
        return server

    def choose(self, session: str, server_id: str | None) -> Server:
        """`session` talks to `server_id` from now on (None or the app's own id: back to the app's own);
        InvalidRequest when it is not listed or cannot be used."""
        server = self.usable(server_id)
        with self._lock:
            self._notes.pop(session, None)
            if server.id == self._own:
                self._chosen.pop(session, None)
            else:
                self._chosen[session] = server.id
        return server

    def chosen(self, session: str | None) -> Server:
        """The server `session` talks to: its choice while that server can be used, else the app's own (the
        reason kept for `fallback_note`)."""
        if not session:
            return self.own
        with self._lock:
            server = self._servers.get(self._chosen.get(session, self._own))
            if server is not None and server.usable:
                return server
            gone = self._chosen.pop(session, None)
            if gone is not None:
                self._notes[session] = MSG_SERVER_FELL_BACK.format(
                    server=server.shown if server is not None else gone, own=self.own.label)
            return self.own

    def chosen_id(self, session: str | None) -> str:
        return self.chosen(session).id

    def fallback_note(self, session: str | None) -> str | None:
        """Why `session` is back on the app's own server, once (None when it is not, or was told already)."""
        self.chosen(session)  # a server that stopped since the last call is noticed now
        with self._lock:
            return self._notes.pop(session or "", None)

    def mark_unreachable(self, server_id: str, unreachable: bool = True) -> None:
        """A status read found the server down (or back); the app's own is never marked (it waits for it)."""
        with self._lock:
            server = self._servers.get(server_id)
            if server is not None and server_id != self._own:
                server.unreachable = unreachable

    def choices(self) -> list[tuple[str, str]]:
        """(shown label, id) for a picker, the app's own first."""
        return [(server.shown, server.id) for server in self.listed()]
