"""Benchmark and Server tabs in Debian's Chromium against a pacing tritonserver (20 words/s): readable axes,
bars from zero, problems as messages (not an error over the tab), Stop, one level drawn, the users' own figures
and the history from before a page was opened."""

from __future__ import annotations

import re

import httpx
import pytest
from gradio_client import Client

from tests.bench_fixtures import pacing, serve_app  # noqa: F401 - fixture
from tests.browser.chat_helpers import wait_until
from tests.browser.test_bench_pages import pages_url  # noqa: F401 - fixture
from tests.browser_tabs import app_tab, grant_access
from tests.unit.app.deployments.openai_compat.test_wire import png_bytes

BAD_NUMBER = re.compile(r"e[+-]\d|\.0{4,}")  # 1e+2, 0.000000


def _open(browser_context, served, tab: str = "Benchmark"):
    ctx, url = served
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    page.goto(url)
    page.wait_for_selector("#bench-run")
    if tab != "Benchmark":
        page.get_by_role("tab", name=tab).click()
    return page


def _axis_texts(page, chart: str) -> list[str]:
    return page.evaluate(f"() => [...document.querySelectorAll('{chart} svg text')].map(t => t.textContent)")


def _table_rows(page) -> list[list[str]]:
    """The figures table's rows as a person reads them (the cells after the last header)."""
    cells = page.inner_text("#bench-table").split("e2e p99 ms", 1)[1].split()
    return [cells[i:i + 10] for i in range(0, len(cells), 10)]


def _drawn_marks(page, chart: str) -> list[str]:
    """The Vega marks of the chart(s) whose element id starts with `chart` that are drawn with a size (a line of
    one point has none), by their aria-label: "concurrency: 1; ms: 13.8; series: p50"."""
    return page.evaluate("""chart => [...document.querySelectorAll(`[id^="${chart}"] .plot_marks path`)]
        .filter(mark => { const box = mark.getBoundingClientRect(); return box.width > 0 && box.height > 0; })
        .map(mark => mark.getAttribute('aria-label'))""", chart)


def _fields(label: str) -> dict[str, str]:
    return dict(part.split(": ", 1) for part in label.split("; "))


def _errors_shown(page) -> int:
    """Gradio's "Error" badge over an output that failed (what blanks a tab)."""
    return page.get_by_text("Error", exact=True).locator("visible=true").count()


def test_benchmark_axes_bars_and_table(browser_context, pages_url):  # noqa: F811
    page = _open(browser_context, pages_url)
    try:
        headers = page.inner_text("#bench-table")
        assert "concurrency" in headers and "tokens/s" in headers  # named columns before any run, not 1 2 3
        assert page.input_value("#bench-adapter input") == "base model"
        page.fill("#bench-output-len input[type=number]", "5")
        for level in ("4", "8"):
            page.get_by_label(level, exact=True).uncheck()
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Done:')", timeout=180_000)
        # Both charts drawn with their axes (the zero line at least), rather than a fixed wait after the first text.
        for chart in ("#bench-latency", "#bench-throughput"):
            page.wait_for_function("chart => [...document.querySelectorAll(chart + ' svg text')]"
                                   ".some(t => t.textContent === '0')", arg=chart)
        latency, bars = _axis_texts(page, "#bench-latency"), _axis_texts(page, "#bench-throughput")
        assert {"1", "2"} <= set(latency) and not {"1.5", "1.1", "1.0"} & set(latency), latency
        assert "0" in bars and "0" in latency, (bars, latency)  # both y axes start at zero
        assert not [t for t in latency + bars if BAD_NUMBER.search(t)], latency + bars
        assert [row[0] for row in _table_rows(page)] == ["1", "2"]
    finally:
        page.close()


def test_benchmark_problems_are_messages_not_an_error_over_the_tab(browser_context, pages_url, tmp_path):  # noqa: F811
    page = _open(browser_context, pages_url)
    try:
        page.fill("#bench-model textarea, #bench-model input", "no-such-model")
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('no-such-model')")
        assert page.inner_text("#bench-status").startswith("⚠️")
        page.wait_for_selector(".toast-body:has-text('no-such-model')")
        assert _errors_shown(page) == 0
        assert "concurrency" in page.inner_text("#bench-table")  # the table is still there
        assert page.locator("#bench-run").is_enabled()

        page.fill("#bench-model textarea, #bench-model input", "pacing")
        image = tmp_path / "sign.png"
        image.write_bytes(png_bytes())
        page.set_input_files("#bench-image input[type=file]", str(image))
        page.wait_for_selector("#bench-image img")
        page.click("#bench-run")  # the pacing model takes no images: said before any request is sent
        page.wait_for_selector("#bench-status:has-text('image')")
        assert page.inner_text("#bench-status").startswith("⚠️") and _errors_shown(page) == 0
    finally:
        page.close()


def test_benchmark_stop_cuts_the_run_short(browser_context, pages_url):  # noqa: F811
    page = _open(browser_context, pages_url)
    try:
        page.fill("#bench-output-len input[type=number]", "200")  # 10 s per request at 20 words/s
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Running concurrency 1')")
        page.click("#bench-stop")
        page.wait_for_selector("#bench-status:has-text('Stopped.')")
        # Cut short: the request under way (10 s of words) did not finish, so no row of figures was made.
        assert "Concurrency 1 was cut short" in page.inner_text("#bench-status")
        assert _table_rows(page) == [] and _errors_shown(page) == 0
        page.fill("#bench-output-len input[type=number]", "3")  # the tab runs again after a Stop
        for level in ("2", "4", "8"):
            page.get_by_label(level, exact=True).uncheck()
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Done:')", timeout=180_000)
    finally:
        page.close()


def test_server_tab_shows_what_the_users_live_through(browser_context, pages_url):  # noqa: F811
    page = _open(browser_context, pages_url, tab="Server")
    try:
        page.wait_for_selector("#server-users:has-text('0 replies in progress')")
        # two chats through the app's own API, each 60 words at 20 words/s
        page.evaluate("""() => { window.replies = [0, 1].map(() => fetch('/v1/chat/completions', {method: 'POST',
            headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({model: 'pacing', stream: true, max_tokens: 60,
                                  messages: [{role: 'user', content: 'hi'}]})}).then(r => r.text())); }""")
        page.wait_for_selector("#server-users:has-text('2 replies in progress')")
        page.wait_for_function("""() => { const m = document.querySelector('#server-users').innerText
            .match(/([0-9.]+) output tokens\\/s/); return m && parseFloat(m[1]) >= 20; }""")
        page.evaluate("() => Promise.all(window.replies)")
        page.wait_for_selector("#server-users:has-text('0 replies in progress')")
        assert "first token after" in page.inner_text("#server-users")
        figures = Client(pages_url[1], verbose=False).predict(api_name="/server_figures")  # the same, by API
        assert figures["replies_in_progress"] == 0 and figures["output_tokens_total"] >= 120
        assert figures["time_to_first_token_ms"] > 0
        texts = _axis_texts(page, "#server-user-tokens") + _axis_texts(page, "#server-rate")
        assert "0" in texts and "seconds (0 = now)" in texts
        assert not [t for t in texts if BAD_NUMBER.search(t)], texts
    finally:
        page.close()


def test_benchmark_stop_is_on_only_while_a_run_is_under_way(browser_context, pages_url):  # noqa: F811
    page = _open(browser_context, pages_url)
    try:
        assert page.locator("#bench-stop").is_disabled()  # nothing runs yet
        page.fill("#bench-output-len input[type=number]", "200")  # 10 s per request at 20 words/s
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Running concurrency 1')")
        page.wait_for_selector("#bench-stop:enabled")
        page.click("#bench-stop")
        page.wait_for_selector("#bench-status:has-text('Stopped.')")
        page.wait_for_selector("#bench-stop:disabled")
    finally:
        page.close()


def test_a_one_level_run_draws_its_latency_points(browser_context, pages_url):  # noqa: F811
    page = _open(browser_context, pages_url)
    try:
        page.fill("#bench-output-len input[type=number]", "3")
        for level in ("2", "4", "8"):
            page.get_by_label(level, exact=True).uncheck()
        page.click("#bench-run")
        page.wait_for_selector("#bench-status:has-text('Done:')")
        page.wait_for_selector("#bench-stop:disabled")  # the run is over
        (row,) = _table_rows(page)
        for chart, p50_column in (("bench-ttft", 5), ("bench-latency", 8)):
            labels = wait_until(lambda chart=chart: _drawn_marks(page, chart), what=f"points in #{chart}")
            points = {_fields(label)["series"]: _fields(label) for label in labels}
            assert sorted(points) == ["p50", "p90", "p99"], labels
            assert {point["concurrency"] for point in points.values()} == {row[0]} == {"1"}
            # the table's figure (to 0.1 ms), drawn
            assert float(points["p50"]["ms"]) == pytest.approx(float(row[p50_column]), abs=0.051, rel=1e-3)
    finally:
        page.close()


def _chat_through_the_api(url: str, words: int) -> str:
    body = {"model": "pacing", "stream": True, "max_tokens": words, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", url + "v1/chat/completions", json=body, timeout=60) as reply:
        return "".join(reply.iter_text())


def _chart_values(page, chart: str, metric: str, y_title: str) -> list[float]:
    """The values of `metric` that the line chart `chart` holds, from its points' aria-labels (named by the axis
    titles: "seconds (0 = now): −6; requests/s: 1.48; metric: requests/s")."""
    labels = page.evaluate(f"() => [...document.querySelectorAll('#{chart} .hover_marks path[aria-label]')]"
                           ".map(p => p.getAttribute('aria-label'))")
    return [float(f[y_title].replace(",", "").replace("−", "-")) for f in map(_fields, labels)
            if f.get("metric") == metric and f.get(y_title)]


def test_a_server_tab_opened_later_charts_the_requests_before_it(browser_context, pacing):  # noqa: F811
    blocks, url, ctx = serve_app(pacing.grpc_url, metrics_url=pacing.metrics_url)  # no page of it is open
    try:
        # Two rounds of the app's own readings (the server's and the users'), taken with no page open.
        wait_until(lambda: len(ctx.live.readings) >= 2, what="the app's readings before any page is open")
        for _ in range(3):
            assert "data: [DONE]" in _chat_through_the_api(url, words=10)
        with app_tab(browser_context, (ctx, url)) as page:
            page.get_by_role("tab", name="Server").click()
            def shown() -> str:  # what the tab showed, should the wait run out (a known load-only failure)
                return (f"summary {page.locator('#server-summary').inner_text()!r}, requests/s "
                        f"{_chart_values(page, 'server-rate', 'requests/s', 'requests/s')}, app readings "
                        f"{len(ctx.live.readings)}")
            wait_until(lambda: any(v > 0 for v in _chart_values(page, "server-rate", "requests/s", "requests/s")),
                       what="the earlier requests in the requests/s chart", explain=shown)
            wait_until(lambda: any(v > 0 for v in _chart_values(page, "server-user-tokens", "output tokens/s",
                                                                  "tokens/s")),
                       what="the earlier replies in the users' tokens/s chart", explain=shown)
    finally:
        blocks.close()
