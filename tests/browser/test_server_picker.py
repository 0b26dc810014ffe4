"""Servers as a per-session choice, in Debian's Chromium: a twin launched from the Build page beside the demo (its
default ports taken, as `make demo` takes them) is chatted with in one browser session while another keeps chatting
with the demo; once it is stopped, both sessions are served by the demo again. An address typed into "Add a server"
is checked before it is listed."""

from __future__ import annotations

import contextlib
import socket

import pytest

from app.context import AppConfig, AppContext
from app.web.ui import build_app
from tests.browser.chat_helpers import ask, settled_reply, status_line, toasts, wait_until
from tests.browser_tabs import first_visit, grant_access
from tests.servers import free_port

DEFAULT_PORTS = (8000, 8001, 8002)  # the Build form's defaults, which `make demo` holds


@contextlib.contextmanager
def held_ports(ports):
    """Listen on every port of `ports` that is free (one another program holds is taken already)."""
    with contextlib.ExitStack() as stack:
        for port in ports:
            held = stack.enter_context(socket.socket())
            try:
                held.bind(("127.0.0.1", port))
                held.listen()
            except OSError:
                continue
        yield


@pytest.fixture
def demo_app_with_build(triton):
    """The whole app (Build page included) against the run's demo tritonserver, served in this process."""
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True))
    blocks = build_app(ctx)
    blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def answered(page, text: str) -> str:
    ask(page, text)
    return settled_reply(page)


def picked_server(page) -> str:
    return page.input_value("#server input")


def test_a_build_launched_twin_is_one_sessions_choice_and_both_fall_back_when_it_stops(
        browser_context, demo_app_with_build, triton):
    ctx, url = demo_app_with_build
    grant_access(browser_context, ctx, url)
    demo_where = f"at {triton.grpc_url} "
    keeps, switches = first_visit(browser_context, url), first_visit(browser_context, url)
    try:
        assert demo_where in status_line(keeps) and demo_where in status_line(switches)
        switches.get_by_role("tab", name="Build").click()
        with held_ports(DEFAULT_PORTS):
            switches.click("#build-cpu-demo")
            switches.wait_for_selector("#build-open-chat", state="visible", timeout=400_000)
        assert "already in use" not in switches.inner_text("#build-server")
        twin = ctx.servers.get("build")
        assert twin is not None and twin.usable
        twin_url = twin.deployment.url
        assert twin_url != triton.grpc_url and int(twin_url.rsplit(":", 1)[1]) not in DEFAULT_PORTS
        switches.click("#build-open-chat")
        switches.wait_for_selector("#chat-input textarea", state="visible")
        wait_until(lambda: f"at {twin_url} " in status_line(switches), what="the status line names the twin")
        assert "Build page" in picked_server(switches)
        assert "cannot be reached" not in answered(switches, "What is the capital of France?")
        # the other session was not moved: it still talks to the demo, and its picker still shows the app's own
        assert "cannot be reached" not in answered(keeps, "Say hello.")
        assert demo_where in status_line(keeps) and "This app's server" in picked_server(keeps)
        keeps.click("#server input")  # the twin is listed for every session
        keeps.get_by_role("option", name=twin.label).wait_for()
        keeps.keyboard.press("Escape")

        switches.get_by_role("tab", name="Build").click()
        switches.click("#build-stop-server")
        switches.wait_for_selector("text=Triton stopped.")
        switches.get_by_role("tab", name="Chat").click()
        wait_until(lambda: demo_where in status_line(switches), timeout=30, what="the demo's status line again")
        assert "Back on this app's server" in status_line(switches)
        wait_until(lambda: "This app's server" in picked_server(switches), timeout=30, what="the picker back")
        for page in (switches, keeps):
            reply = answered(page, "What is the capital of Italy?")
            assert "cannot be reached" not in reply and "UNAVAILABLE" not in reply, reply
            assert demo_where in status_line(page)
        switches.click("#server input")
        switches.get_by_role("option", name=twin.label + " (stopped)").wait_for()
        switches.keyboard.press("Escape")
    finally:
        keeps.close()
        switches.close()


def test_an_added_address_is_checked_before_it_is_listed(browser_context, demo_app_with_build, triton):
    ctx, url = demo_app_with_build
    grant_access(browser_context, ctx, url)
    page = first_visit(browser_context, url)
    try:
        page.get_by_text("Add a server").click()
        nobody = f"127.0.0.1:{free_port()}"
        page.fill("#server-address input, #server-address textarea", nobody)
        page.click("#server-add")
        wait_until(lambda: any("Nothing answers at" in t for t in toasts(page)), what="the refusal")
        # the note under the form is the event's last output: a click while the event still runs is dropped by
        # the page (the toast comes earlier, mid-event: a loaded run's third click was lost that way)
        wait_until(lambda: "Nothing answers at" in page.inner_text("#server-note"), what="the refusal's note")
        assert [s.id for s in ctx.servers.listed()] == ["app"]  # nothing listed
        page.fill("#server-address input, #server-address textarea", "not an address")
        page.click("#server-add")
        wait_until(lambda: any("Give the server's address" in t for t in toasts(page)), what="the address rule")
        wait_until(lambda: "Give the server's address" in page.inner_text("#server-note"), what="the rule's note")
        page.fill("#server-address input, #server-address textarea", triton.grpc_url)  # the demo itself, added as a Triton address
        page.click("#server-add")
        wait_until(lambda: "Triton at" in picked_server(page), what="the added server picked")
        assert "cannot be reached" not in answered(page, "What is the capital of France?")
    finally:
        page.close()


@pytest.fixture
def app_with_own_adapters(triton, tmp_path):
    """The whole app on the demo server with an adapters folder of its own (a copy of pirate)."""
    import shutil

    from setup.paths import PROJECT_ROOT

    folder = tmp_path / "adapters"
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", folder / "pirate")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True, adapters_dir=str(folder)))
    blocks = build_app(ctx)
    blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def test_an_adapter_removed_while_the_chat_has_it_picked_is_unpicked(browser_context, app_with_own_adapters):
    """The Adapters tab removes the adapter the Chat tab has picked: back on the Chat tab the picker shows the base
    model, and the next message is answered by it (not "There is no adapter named 'pirate'")."""
    ctx, url = app_with_own_adapters
    grant_access(browser_context, ctx, url)
    page = first_visit(browser_context, url)
    try:
        page.click("#adapter input")
        page.locator('li[role=option][aria-label="pirate"]:visible').click()
        assert page.input_value("#adapter input") == "pirate"
        page.get_by_role("tab", name="Adapters").click()
        page.click("#remove-adapter-name input")
        page.locator('li[role=option][aria-label="pirate"]:visible').click()
        page.click("#remove-adapter")
        page.click("#remove-adapter-yes")
        page.wait_for_selector("#adapter-message:has-text('Removed pirate')")
        page.get_by_role("tab", name="Chat").click()
        wait_until(lambda: page.input_value("#adapter input") != "pirate", timeout=30, what="the picker unpicked")
        assert page.input_value("#adapter input") == "base model"
        reply = answered(page, "What is the capital of France?")
        assert "no adapter named" not in reply and "Paris" in reply, reply
    finally:
        page.close()


def test_a_remove_question_left_open_is_withdrawn_when_the_tab_is_shown_again(browser_context, app_with_own_adapters):
    """Asked on the Adapters tab, left open while the chat picks another server: back on the tab the question is gone
    (it named the folder of the server shown before) and nothing was removed."""
    ctx, url = app_with_own_adapters
    grant_access(browser_context, ctx, url)
    page = first_visit(browser_context, url)
    try:
        page.get_by_role("tab", name="Adapters").click()
        page.click("#remove-adapter-name input")
        page.locator('li[role=option][aria-label="pirate"]:visible').click()
        page.click("#remove-adapter")
        page.wait_for_selector("#remove-adapter-confirm", state="visible")
        page.get_by_role("tab", name="Chat").click()
        page.get_by_role("tab", name="Adapters").click()
        page.wait_for_selector("#remove-adapter-confirm", state="hidden", timeout=30_000)
        assert "pirate" in ctx.adapters.names()
    finally:
        page.close()


def open_adapters(page) -> None:
    page.get_by_role("tab", name="Adapters").click()
    page.wait_for_selector("#adapters-header", state="visible")


def adapters_header(page) -> str:
    return page.inner_text("#adapters-header")


def test_the_adapters_tab_shows_the_server_the_session_chose(browser_context, demo_app_with_build, triton):
    """The demo added by another address (localhost) is one session's server: its Adapters tab names that server
    while a second session's names the app's own; picked back in the chat, the first one's names the app's own."""
    ctx, url = demo_app_with_build
    grant_access(browser_context, ctx, url)
    other = "localhost:" + triton.grpc_url.rsplit(":", 1)[1]
    switches, keeps = first_visit(browser_context, url), first_visit(browser_context, url)
    try:
        switches.get_by_text("Add a server").click()
        switches.fill("#server-address input, #server-address textarea", other)
        switches.click("#server-add")
        wait_until(lambda: f"Triton at {other}" in picked_server(switches), what="the added server picked")
        kind = ctx.deployment.kind
        open_adapters(switches)
        wait_until(lambda: f"LoRA adapters of the {kind} at {other};" in adapters_header(switches),
                   what="the Adapters tab naming the added server")
        open_adapters(keeps)
        assert f"at {triton.grpc_url};" in adapters_header(keeps)  # the other session: the app's own
        assert "pirate" in keeps.inner_text("#adapter-table")

        switches.get_by_role("tab", name="Chat").click()
        switches.click("#server input")
        switches.get_by_role("option", name=ctx.servers.own.label).click()
        wait_until(lambda: "This app's server" in picked_server(switches), what="the app's own picked back")
        open_adapters(switches)
        wait_until(lambda: f"at {triton.grpc_url};" in adapters_header(switches),
                   what="the Adapters tab naming the app's own again")
    finally:
        keeps.close()
        switches.close()
