"""The Server tab's charts over the history the app's sampler keeps: the x axis spans the readings held; its adapter
cache section follows the server each browser session chose (the app's own: what the app saw; vLLM: its own LoRA
figures; trtllm-serve and the others: a sentence saying they give none)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from app.context import AppConfig, AppContext
from app.triton.metrics import Snapshot
from app.web.pages import server
from setup.paths import PROJECT_ROOT


def readings(minutes: float, every: float = server.SAMPLE_SECONDS) -> list[Snapshot]:
    count = int(minutes * 60 / every) + 1
    return [Snapshot(at=n * every, success=n, pending=0) for n in range(count)]


def test_a_long_history_is_charted_whole_and_a_short_one_over_three_minutes(monkeypatch):
    monkeypatch.setattr(server.MetricsHistory, "refresh", lambda self: None)  # only what the sampler took
    history = server.server_history("http://unused/metrics", "pacing")
    history.snapshots.extend(readings(minutes=10))
    _, rate, latency, load, _ = server.charts(history)
    assert rate.constructor_args["x_lim"] == [-600.0, 0] == load.constructor_args["x_lim"]
    assert rate.constructor_args["value"]["value"].min() > 0  # the requests of ten minutes ago are there
    history.snapshots.clear()
    history.snapshots.extend(readings(minutes=1))
    assert server.charts(history)[1].constructor_args["x_lim"] == [-server.WINDOW_SECONDS, 0]


def test_the_server_history_is_a_bounded_ring_of_a_quarter_hour(monkeypatch):
    history = server.server_history("http://unused/metrics", "pacing")
    history.clock = iter(range(0, 10**6, int(server.SAMPLE_SECONDS))).__next__  # the sampler's pace
    monkeypatch.setattr("app.triton.metrics.fetch_metrics", lambda url, timeout=2.0: {})
    for _ in range(2 * history.size):  # half an hour of readings
        history.refresh()
    held = history.snapshots[-1].at - history.snapshots[0].at
    assert len(history.snapshots) == history.size and held == server.HISTORY_SECONDS


# ---- the adapter-cache section follows the browser session's chosen server ----------------------------------------
CAPTURED = (PROJECT_ROOT / "tests" / "data" / "servers" / "vllm-0.32.0-metrics.txt").read_text()


class OpenAIStandIn(BaseHTTPRequestHandler):
    """/v1/models of a server owned by `owner`, and /metrics answering `metrics` (None: 404)."""

    owner, metrics = "vllm", None

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/v1/models":
            entry = {"id": "smollm2", "object": "model", "owned_by": self.owner}
            body, kind = json.dumps({"object": "list", "data": [entry]}), "application/json"
        elif self.path == "/metrics" and self.metrics is not None:
            body, kind = self.metrics, "text/plain"
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    """Start a stand-in server: stand_in(owner, metrics) -> its URL."""
    started = []

    def start(owner: str, metrics: str | None) -> str:
        handler = type("Handler", (OpenAIStandIn,), {"owner": owner, "metrics": metrics})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1"

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def session(name: str | None) -> SimpleNamespace | None:
    return None if name is None else SimpleNamespace(session_hash=name)


def test_each_session_sees_the_adapter_cache_of_the_server_it_chose(tmp_path, stand_in):
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1", adapters_dir=str(tmp_path / "adapters")))
    vllm = ctx.openai_server(stand_in("vllm", CAPTURED))
    trtllm = ctx.openai_server(stand_in("tensorrt_llm", None))
    bare = ctx.openai_server(stand_in("sglang", None))
    for name, server_id in (("v", vllm.id), ("t", trtllm.id), ("b", bare.id)):
        ctx.servers.choose(name, server_id)
    own = server.cache_section(server.session_view(ctx, session("o")))  # the app's own: what it saw, as before
    assert own.startswith("**Adapters in the server's LoRA cache**") and "No adapter request yet" in own
    assert server.cache_api_fields(server.session_view(ctx, None))["source"] == "app"  # an API caller: the own
    shown = server.cache_section(server.session_view(ctx, session("v")))
    assert f"at `{vllm.deployment.url}`" in shown and "vllm:lora_requests_info (vLLM 0.32.0)" in shown
    assert "in use in the last 15 minutes: french, pirate" in shown and "(max loras): 1" in shown
    fields = server.cache_api_fields(server.session_view(ctx, session("v")))
    assert fields["source"] == "server" and fields["recent"] == ["french", "pirate"] and fields["max_loras"] == 1
    said = server.cache_section(server.session_view(ctx, session("t")))
    assert "trtllm-serve 0.20.0rc1 to main@00057725 reports no LoRA figures" in said
    none = server.cache_api_fields(server.session_view(ctx, session("b")))
    assert none["source"] == "none" and "could not be read" in none["note"]  # its /metrics answers 404
