"""An open tab asks the server only for what its shown page refreshes: the Build page's job poll runs while the
Build tab is shown, and stops when the person goes back to Chat; the first tab's select event, fired when the page
loads, cannot turn off the timers of a tab clicked while it was still being answered."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import gradio as gr

from app.web import page_timers
from tests.browser.chat_helpers import wait_until
from tests.servers import free_port

BUILD_POLLS = ("on_tick", "on_engines")  # the Build page's timer handlers
QUIET_MS = 4_000  # four of the Build page's one-second ticks
SLOW_SECONDS = 3.0  # how long the load-time switch takes here: a machine too busy to answer it before the click's


def poll_ids(page) -> set[int]:
    """The Gradio function ids of the Build page's timer handlers, from the page's own config."""
    dependencies = page.evaluate("window.gradio_config.dependencies")
    return {dependency["id"] for dependency in dependencies if dependency.get("api_name") in BUILD_POLLS}


def record_calls(page) -> list[int]:
    """Every queued call's function id from now on."""
    calls: list[int] = []

    def on_request(request) -> None:
        if "/queue/join" in request.url and request.post_data:
            calls.append(json.loads(request.post_data)["fn_index"])

    page.on("request", on_request)
    return calls


def test_the_build_pages_poll_runs_only_while_its_tab_is_shown(page):
    polls = poll_ids(page)
    assert len(polls) == 2
    calls = record_calls(page)
    page.wait_for_timeout(QUIET_MS)
    assert not polls & set(calls), "the Chat page's tab asked for the Build page's job poll"

    with page.expect_request(lambda request: "/queue/join" in request.url and request.post_data
                             and json.loads(request.post_data)["fn_index"] in polls):
        page.get_by_role("tab", name="Build", exact=True).click()

    page.get_by_role("tab", name="Chat", exact=True).click()
    page.wait_for_timeout(1_500)  # a tick already on its way may still land
    calls.clear()
    page.wait_for_timeout(QUIET_MS)
    assert not polls & set(calls), "the Build page's job poll went on after leaving its tab"


def test_a_tab_clicked_while_the_load_time_switch_is_answered_keeps_its_timer(browser_context, monkeypatch):
    ticks: list[float] = []
    with gr.Blocks() as blocks:
        with gr.Tabs():
            with gr.Tab("First") as first:
                gr.Markdown("first page")
                gr.Timer(0.5).tick(lambda: None, None, None)
            with gr.Tab("Second") as second:
                gr.Markdown("second page")
                gr.Timer(0.5).tick(lambda: ticks.append(time.monotonic()), None, None)
        page_timers.tick_while_shown([first, second])
    answered = threading.Event()
    switches = {"made": 0}

    def slow_first_switch(**update):  # the page's first switch (the load-time select) takes SLOW_SECONDS
        switches["made"] += 1
        if switches["made"] == 1:
            time.sleep(SLOW_SECONDS)
            answered.set()
        return gr.Timer(**update)

    monkeypatch.setattr(page_timers, "gr", SimpleNamespace(Timer=slow_first_switch))
    port = free_port()
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    page = browser_context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_text("first page").wait_for()
        wait_until(lambda: switches["made"] >= 1, timeout=30, what="the load-time switch to start")
        page.get_by_role("tab", name="Second").click()  # while the load-time switch is still being answered
        page.get_by_text("second page").wait_for()
        assert answered.wait(30), "the load-time switch never finished"
        time.sleep(1.0)  # its answer reaches the page
        since = time.monotonic()
        wait_until(lambda: sum(tick > since for tick in ticks) >= 3, timeout=20,
                   what="the shown tab's timer to keep ticking after the load-time switch was answered")
    finally:
        page.close()
        blocks.close()
