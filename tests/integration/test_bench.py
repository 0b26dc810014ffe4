"""The benchmark tools against a real tritonserver serving the pacing model (fixed-rate words)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import gradio as gr
import pytest

from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from tests.bench_fixtures import pacing, pacing_log_lines  # noqa: F401 - fixture


@pytest.fixture(scope="module")
def app(pacing, tmp_path_factory):  # noqa: F811
    """The app as a server process of its own in front of the pacing model, started once for this module."""
    from benchmarks.harness import AppProcess

    with AppProcess(pacing.grpc_url, "pacing", tmp_path_factory.mktemp("bench-app") / "app.log") as process:
        yield process


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "bench", *args], capture_output=True, text=True, timeout=120)


def test_bench_prints_the_figures_and_writes_json(pacing, tmp_path):  # noqa: F811
    out = tmp_path / "bench.json"
    result = run_bench("--triton", pacing.grpc_url, "--model", "pacing", "--concurrency", "4", "--num-requests", "8",
                       "--output-len", "10", "--json", str(out))
    assert result.returncode == 0, result.stderr
    for label in ("Requests/s", "Output tokens/s", "Time to first token", "Inter-token latency", "End-to-end latency"):
        assert label in result.stdout
    assert "8/8 requests, 0 errors" in result.stderr  # the progress bar
    figures = json.loads(out.read_text())
    assert figures["completed"] == 8 and figures["errors"] == 0 and figures["avg_output_tokens"] == 10
    # The pacing model waits 50 ms between words, so no load can make it faster: 4 streams x 10 words in at
    # least 0.45 s each is at most 89 words/s. A busy machine only makes it slower, and can bunch words on their
    # way, so the gaps a client sees have no lower bound; they are checked for order, not for time.
    assert 0 < figures["output_tokens_per_second"] < 95
    itl = figures["itl_ms"]
    assert 0 <= itl["p50"] <= itl["p90"] <= itl["p99"], itl


def test_bench_through_the_apps_openai_api(app, tmp_path):
    """The same load through the app: the app is a real server process in front of the pacing model."""
    out = tmp_path / "bench.json"
    result = run_bench("--openai", app.url + "v1", "--concurrency", "4", "--num-requests", "8",
                       "--output-len", "10", "--json", str(out))
    unknown = run_bench("--openai", app.url + "v1", "--adapter", "klingon", "--num-requests", "1")
    assert result.returncode == 0, result.stderr
    assert f"through {app.url}v1" in result.stdout and "Time to first token" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["completed"] == 8 and figures["errors"] == 0
    assert figures["avg_output_tokens"] == 10  # the app's own count (stream_options.include_usage)
    assert figures["settings"]["openai"] == app.url + "v1" and figures["settings"]["model"] == "pacing"
    assert unknown.returncode == 2 and "There is no adapter named 'klingon'" in unknown.stderr


def test_bench_poisson_arrivals_and_json_on_stdout(pacing):  # noqa: F811
    result = run_bench("--triton", pacing.grpc_url, "--model", "pacing", "--request-rate", "20", "--num-requests", "6",
                       "--output-len", "4", "--json", "--no-progress")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["settings"]["request_rate"] == 20 and figures["completed"] == 6


def test_bench_refuses_a_model_the_server_lacks(pacing):  # noqa: F811
    result = run_bench("--triton", pacing.grpc_url, "--model", "no_such_model", "--num-requests", "1")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Model 'no_such_model' is not ready on the Triton server" in result.stderr


def test_stream_counts_one_chunk_per_token(pacing):  # noqa: F811
    stream = TritonChatClient(pacing.grpc_url, model="pacing").stream("hi", SamplingParams(max_tokens=12))
    time.sleep(0.3)  # a slow reader loses nothing
    deltas = list(stream)
    assert len(stream.text.split()) == 12 and stream.chunks == 12 == len(deltas) and "".join(deltas) == stream.text


def test_cancel_reaches_the_pacing_model(pacing):  # noqa: F811
    stream = TritonChatClient(pacing.grpc_url, model="pacing").stream("hi", SamplingParams(max_tokens=500))
    next(stream)
    stream.cancel()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [line for line in pacing_log_lines(pacing) if stream.request_id in line]
        if lines:
            break
        time.sleep(0.1)
    assert "(cancel) ended after" in lines[0] and int(lines[0].split("after ")[1].split()[0]) < 20


def test_server_page_shows_requests_in_flight(pacing):  # noqa: F811
    from app.triton.metrics import MetricsHistory
    from app.web.pages.server import charts

    history = MetricsHistory(pacing.metrics_url, min_interval=0.0)
    client = TritonChatClient(pacing.grpc_url, model="pacing")
    streams = [client.stream("hi", SamplingParams(max_tokens=60)) for _ in range(3)]
    try:
        time.sleep(0.3)
        charts(history)
        time.sleep(0.3)
        summary, rate, latency, load, kv = charts(history)
    finally:
        for stream in streams:
            stream.cancel()
    assert "in flight 3 of 64" in summary and "pacing" in summary
    load_rows = load.constructor_args["value"]  # chart updates: the rows and a y axis from 0 above the top value
    assert set(load_rows["metric"]) >= {"queued", "in flight"} and load_rows["value"].max() == 3
    assert load.constructor_args["y_lim"][0] == 0 and load.constructor_args["y_lim"][1] > 3
    assert list(rate.constructor_args["value"].columns) == ["t", "metric", "value"]


def test_benchmark_page_run(pacing):  # noqa: F811
    from app.context import AppConfig, AppContext
    from app.web.pages import benchmark
    ctx = AppContext(AppConfig(triton_url=pacing.grpc_url, model="pacing"))
    outputs = list(benchmark.run(ctx, "pacing", ["1", "4"], 4, 8, 5))
    status, table, latency, _, e2e, _, throughput, stop = outputs[-1]
    assert status.startswith("Done: 8 requests") and table["errors"].tolist() == [0, 0]
    latency_rows, e2e_rows = latency.constructor_args["value"], e2e.constructor_args["value"]
    assert set(latency_rows["concurrency"]) == {"1", "4"} and set(e2e_rows["series"]) == {"p50", "p90", "p99"}
    assert isinstance(throughput, gr.BarPlot) and throughput.constructor_args["y_lim"][0] == 0
    assert stop.constructor_args["interactive"] is False  # Stop goes off with the run's last word
    busy = threading.Thread(target=lambda: list(benchmark.run(ctx, "pacing", ["1"], 2, 8, 40)))
    busy.start()
    time.sleep(0.3)
    (refused,) = list(benchmark.run(ctx, "pacing", ["1"], 1, 8, 5))  # a message, not an exception
    assert refused[0].startswith("⚠️") and "already running" in refused[0]
    busy.join()


def test_overhead_benchmark_smoke(pacing, app):  # noqa: F811
    from benchmarks.overhead import run_overhead
    from benchmarks.overhead_report import format_report

    result = run_overhead(pacing.grpc_url, app, [1, 4], tokens=10, repeats=1, clients=["sse"], rate=20,
                          log=lambda *a, **k: None)
    assert all(row["errors"] == 0 for row in result["rows"]), result["rows"]
    report = format_report(result)
    assert "app (sse)" in report and "app vs direct" in report and "CPU s/1k tok" in report
    ratio = next(r for r in result["ratios"] if r["concurrency"] == 4)
    assert 0.5 < ratio["tokens_ratio"] <= 1.1 and ratio["offered_tokens_per_second"] == 80
    assert next(r for r in result["rows"] if r["path"] == "app (sse)")["app_cpu_per_1k_tokens"] > 0


def test_bench_hook_that_the_deployment_refuses_is_one_message(pacing, tmp_path, capsys, monkeypatch):  # noqa: F811
    from app.bench import cli as bench
    from app.bench import hooks
    from app.core.errors import TextOnlyDeployment

    image = tmp_path / "x.png"
    image.write_bytes(b"png")

    def refuse(value, prompt, info):
        raise TextOnlyDeployment("This deployment is text-only: images are not sent.")

    monkeypatch.setattr(hooks, "default_hooks", lambda: {"image": refuse})
    monkeypatch.setattr(hooks, "check_values", lambda args: None)  # the file is no image: reach the deployment
    code = bench.main(["--triton", pacing.grpc_url, "--model", "pacing", "--image", str(image), "--num-requests", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == "error: This deployment is text-only: images are not sent."
