"""The servers a browser session can pick: the app's own first, a choice per session, a stopped or unreachable
server marked and its choosers back on the app's own (told once), unknown ids refused with the list."""

from __future__ import annotations

import pytest

from app.chat.messages import MSG_SERVER_MARK_STOPPED, MSG_SERVER_MARK_UNREACHABLE
from app.chat.servers import OWN, Server, ServerList
from app.core.errors import InvalidRequest


def _server(server_id: str, running=lambda: True) -> Server:
    return Server(server_id, f"{server_id} server", "build", config=None, deployment=None, adapters=None,
                  adapter_checks=None, running=running)


def test_each_session_keeps_its_own_choice():
    servers = ServerList(_server(OWN))
    servers.add(_server("build"))
    servers.choose("a", "build")
    assert servers.chosen("a").id == "build" and servers.chosen("b").id == OWN and servers.chosen(None).id == OWN
    servers.choose("a", OWN)  # and can take it back
    assert servers.chosen("a").id == OWN
    assert servers.choices() == [("app server", OWN), ("build server", "build")]


def test_a_stopped_server_is_marked_and_its_choosers_fall_back_once_told():
    alive = {"build": True}
    servers = ServerList(_server(OWN))
    servers.add(_server("build", running=lambda: alive["build"]))
    servers.choose("a", "build")
    alive["build"] = False
    assert servers.chosen("a").id == OWN
    note = servers.fallback_note("a")
    assert note and "build server" in note and "app server" in note
    assert servers.fallback_note("a") is None  # told once
    assert ("build server" + MSG_SERVER_MARK_STOPPED, "build") in servers.choices()
    with pytest.raises(InvalidRequest, match="cannot be used now"):
        servers.choose("a", "build")


def test_an_unreachable_server_is_marked_and_can_come_back():
    servers = ServerList(_server(OWN))
    servers.add(_server("added-1"))
    servers.choose("a", "added-1")
    servers.mark_unreachable("added-1")
    assert servers.chosen("a").id == OWN and "added-1 server" in servers.fallback_note("a")
    assert ("added-1 server" + MSG_SERVER_MARK_UNREACHABLE, "added-1") in servers.choices()
    servers.mark_unreachable(OWN)  # the app's own is never marked: the chat waits for it
    assert servers.own.usable
    servers.mark_unreachable("added-1", False)
    assert servers.choose("a", "added-1").id == "added-1"


def test_an_unknown_or_removed_server_is_refused_with_the_list():
    servers = ServerList(_server(OWN))
    servers.add(_server("added-1"))
    servers.choose("a", "added-1")
    servers.remove("added-1")
    servers.remove(OWN)  # never removed
    assert servers.chosen("a").id == OWN and servers.get(OWN) is not None
    with pytest.raises(InvalidRequest, match="no server 'added-1' in the list; listed: app"):
        servers.choose("a", "added-1")
