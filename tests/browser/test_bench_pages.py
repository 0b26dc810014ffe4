"""The Benchmark and Server tabs in Debian's Chromium, against a pacing tritonserver."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from benchmarks.harness import free_port
from tests.bench_fixtures import pacing  # noqa: F401 - fixture
from tests.browser_tabs import grant_access


@pytest.fixture(scope="module")
def pages_url(pacing):  # noqa: F811
    from app.api.openai_routes import OpenAIApi
    from app.context import AppConfig, AppContext
    from app.web.pages import benchmark, server
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=pacing.grpc_url, model="pacing", metrics_url=pacing.metrics_url, port=port))
    with gr.Blocks(title="bench pages") as blocks:
        with gr.Tabs():
            with gr.Tab(benchmark.TITLE, id="benchmark"):
                benchmark.build(ctx)
            with gr.Tab(server.TITLE, id="server"):
                sampler = server.build(ctx)
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    OpenAIApi(ctx).mount(blocks.server_app)  # as app.web.ui.launch does
    sampler.start(alive=lambda: blocks.is_running)  # as app.web.ui.launch does
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()
    sampler.stop()


def test_benchmark_tab_draws_its_charts(browser_context, pages_url, tmp_path):
    ctx, pages_url = pages_url
    grant_access(browser_context, ctx, pages_url)
    page = browser_context.new_page()
    try:
        page.goto(pages_url)
        page.wait_for_selector("#bench-run")
        page.fill("#bench-output-len input[type=number]", "5")
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Done:')")
        for chart in ("#bench-latency", "#bench-throughput"):
            page.wait_for_selector(f"{chart} canvas, {chart} svg")
        assert "tokens/s" in page.inner_text("#bench-table")
        page.screenshot(path=str(tmp_path / "benchmark.png"), full_page=True)
    finally:
        page.close()


def test_server_tab_shows_live_metrics(browser_context, pages_url):
    pages_url = pages_url[1]
    page = browser_context.new_page()
    try:
        page.goto(pages_url)
        page.get_by_role("tab", name="Server").click()
        page.wait_for_selector("#server-summary:has-text('models: pacing')")
        page.wait_for_selector("#server-load canvas, #server-load svg")
        assert "in flight" in page.inner_text("#server-summary")
    finally:
        page.close()


def test_server_tab_tells_how_to_use_the_api_and_the_page_can_call_it(browser_context, pages_url):
    pages_url = pages_url[1]
    page = browser_context.new_page()
    try:
        page.goto(pages_url)
        page.get_by_role("tab", name="Server").click()
        page.get_by_text("Use this deployment from code").click()
        page.wait_for_selector("#server-api-text:has-text('/v1/chat/completions')")
        assert "OpenAI-compatible API" in page.inner_text("#server-api-text")
        # the API is served on the page's own origin: the browser can stream a reply from it
        text = page.evaluate("""async () => {
            const reply = await fetch('/v1/chat/completions', {method: 'POST',
                headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({model: 'pacing', stream: true, max_tokens: 4,
                                      messages: [{role: 'user', content: 'hi'}]})});
            return await reply.text();
        }""")
        words = [json.loads(line[6:])["choices"][0]["delta"].get("content", "")
                 for line in text.splitlines() if line.startswith("data: {")]
        assert "".join(words).split() == ["alpha", "bravo", "charlie", "delta"]
        assert text.rstrip().endswith("data: [DONE]")
    finally:
        page.close()
