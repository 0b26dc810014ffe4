"""An open tab asks the server only for what its shown page refreshes: the Build page's job poll runs while the
Build tab is shown, and stops when the person goes back to Chat."""

from __future__ import annotations

import json

BUILD_POLLS = ("on_tick", "on_engines")  # the Build page's timer handlers
QUIET_MS = 4_000  # four of the Build page's one-second ticks


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
