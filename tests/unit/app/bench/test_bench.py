"""Benchmark building blocks without a server: statistics, workloads, drivers, CLI checks, metrics."""

from __future__ import annotations

import http.server
import io
import json
import threading
import time
from contextlib import contextmanager

import pytest

from app.bench import cli as bench
from app.bench.load import (
    BenchRequest,
    DatasetError,
    Progress,
    load_dataset,
    run_load,
    run_sessions,
    synthetic_requests,
)
from app.bench.stats import RequestRecord, format_summary, percentile, summarize
from app.bench.sweep import latency_frame, table_frame, throughput_frame
from app.triton.metrics import MetricsHistory, Snapshot, metrics_url_for, parse_metrics, total
from setup.cpu.pacing import PacingSpec, add_pacing_model, render_pacing_config
from setup.repo.writer import RepoError


def record(start, first, end, tokens, gaps=(), error=None):
    return RequestRecord(started=start, first_token=first, ended=end, tokens=tokens, gaps=list(gaps), error=error)


def test_percentiles_match_numpy_linear():
    import numpy as np

    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for pct in (0, 50, 90, 99, 100):
        assert percentile(values, pct) == pytest.approx(np.percentile(values, pct))
    assert percentile([], 50) is None


def test_summary_figures():
    records = [record(0, 0.1, 1.0, 10, [0.1] * 9), record(0, 0.2, 2.0, 20, [0.1] * 19),
               record(0, None, 0.5, 0, error="The Triton server cannot be reached (x).")]
    s = summarize(records, wall_seconds=2.0, label="t")
    assert (s.requests, s.completed, s.errors) == (3, 2, 1)
    assert s.requests_per_second == pytest.approx(1.0)
    assert s.output_tokens_per_second == pytest.approx(15.0)
    assert s.ttft_ms.p50 == pytest.approx(150.0)
    assert s.itl_ms.p99 == pytest.approx(100.0)
    assert s.e2e_ms.avg == pytest.approx(1500.0)
    assert s.error_messages == {"The Triton server cannot be reached (x).": 1}
    text = format_summary(s)
    for label in ("Requests/s", "Output tokens/s", "Time to first token", "Inter-token latency",
                  "End-to-end latency", "p50", "p90", "p99", "Errors"):
        assert label in text
    assert json.loads(json.dumps(s.as_dict()))["ttft_ms"]["p50"] == pytest.approx(150.0)


def test_synthetic_requests_are_distinct_and_sized():
    requests = synthetic_requests(5, input_len=40, output_len=12)
    assert len({r.prompt for r in requests}) == 5
    assert all(len(r.prompt.split()) == 40 and r.max_tokens == r.min_tokens == 12 for r in requests)


def test_dataset_formats(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(["one", {"input": "two", "instruction": "Summarize"},
                                                 {"prompt": "three", "output_len": 7}]))
    got = load_dataset(tmp_path / "a.json", 4, output_len=32)
    assert [r.prompt for r in got] == ["one", "Summarize\n\ntwo", "three", "one"]
    assert [r.max_tokens for r in got] == [32, 32, 7, 32]
    (tmp_path / "b.jsonl").write_text('{"text": "x"}\n\n{"question": "y"}\n')
    assert [r.prompt for r in load_dataset(tmp_path / "b.jsonl", 2, 8)] == ["x", "y"]


@pytest.mark.parametrize("content, message", [
    (None, "cannot be read"),
    ("[]", "holds no prompts"),
    ("{not json", "not JSON or JSON lines"),
    ('[{"answer": "no prompt"}]', "item 1: no prompt text"),
    (b"\xff\xfe\x00", "cannot be read"),
])
def test_bad_datasets_are_refused_with_a_message(tmp_path, content, message):
    path = tmp_path / "d.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(path, 1, 8)


def test_constant_concurrency_never_exceeds_the_limit():
    active, peak, lock = [0], [0], threading.Lock()

    def send(request):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return record(time.monotonic(), None, time.monotonic(), 1)

    records, wall = run_load(send, synthetic_requests(12, 4, 4), concurrency=3)
    assert len(records) == 12 and peak[0] == 3 and wall >= 0.08


def test_poisson_arrivals_follow_the_rate():
    starts = []

    def send(request):
        starts.append(time.monotonic())
        return record(0, None, 0, 0)

    _, wall = run_load(send, synthetic_requests(40, 4, 4), concurrency=40, request_rate=200.0, seed=1)
    assert 0.1 < wall < 0.6  # 39 gaps of 5 ms on average


def test_sessions_run_until_the_time_is_up():
    def send(session, request):
        time.sleep(0.05)
        return record(0, 0.01, 0.05, 1)

    records, wall = run_sessions(send, lambda s, t: BenchRequest(f"{s}-{t}", 4), sessions=4, duration=0.3)
    assert 0.3 <= wall < 1.0 and len(records) >= 4 * 5


def test_progress_bar_on_a_pipe():
    out = io.StringIO()
    bar = Progress(4, stream=out)
    for _ in range(4):
        bar.update(record(0, 0, 0, 1))
    bar.close()
    assert "4/4 requests, 0 errors" in out.getvalue()


def test_extra_hooks_pass_values_through():
    args = bench.build_parser().parse_args(["--triton", "127.0.0.1:1", "--adapter", "pirate"])
    seen = []
    fake = {"adapter": lambda value, prompt, info: (seen.append(value) or prompt, {"lora_task_id": 1})}
    hooks = bench._hooks(args, fake)
    assert hooks[0]("p", None) == ("p", {"lora_task_id": 1}) and seen == ["pirate"]
    assert bench._hooks(bench.build_parser().parse_args(["--triton", "127.0.0.1:1"])) == []


def test_unknown_adapter_is_one_line_before_any_request(capsys):
    assert bench.main(["--triton", "127.0.0.1:1", "--adapter", "no-such-adapter"]) == 2
    assert "There is no adapter named 'no-such-adapter'" in capsys.readouterr().err


@contextmanager
def model_list(ids: list[str]):
    """A real loopback HTTP server whose /v1/models lists `ids` (and answers nothing else)."""
    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.parametrize(("ids", "message"), [
    (["base", "pirate"], "error: There is no adapter named 'klingon'. Known: pirate.\n"),
    (["base"], "error: There is no adapter named 'klingon'. Known: none.\n"),
    ([], "error: The API at {url} lists no models yet.\n"),
])
def test_an_openai_target_checks_the_adapter_against_its_model_list(capsys, ids, message):
    with model_list(ids) as url:
        assert bench.main(["--openai", url, "--adapter", "klingon", "--num-requests", "1"]) == 2
    assert capsys.readouterr().err == message.format(url=url)


def test_pacing_config_renders_and_is_added(tmp_path):
    text = render_pacing_config(PacingSpec(tokens_per_second=12.5, max_batch_size=16))
    assert 'string_value: "12.5"' in text and "max_batch_size: 16" in text and "decoupled: true" in text
    folder = add_pacing_model(tmp_path, PacingSpec())
    assert (folder / "1" / "model.py").is_file() and (folder / "config.pbtxt").is_file()
    with pytest.raises(RepoError, match="tokens per second must be above 0"):
        PacingSpec(tokens_per_second=0)
    with pytest.raises(RepoError, match="does not exist"):
        add_pacing_model(tmp_path / "missing")


METRICS = """# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="ensemble",version="1"} 10
nv_inference_request_success{model="tensorrt_llm",version="1"} 30
nv_inference_request_duration_us{model="ensemble",version="1"} 2000000
nv_inference_count{model="ensemble",version="1"} 10
nv_inference_pending_request_count{model="ensemble",version="1"} 2
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 3
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="tensorrt_llm",version="1"} 0.25
garbage line
"""


def test_metrics_parsing_and_snapshot():
    samples = parse_metrics(METRICS)
    assert total(samples, "nv_inference_request_success") == 40
    assert total(samples, "nv_inference_request_success", model="ensemble") == 10
    assert total(samples, "missing") is None
    snap = Snapshot.of(samples, at=0.0)
    assert (snap.pending, snap.active, snap.kv_fraction, snap.models) == (2, 3, 0.25, ("ensemble",))
    assert metrics_url_for("10.1.2.3:8001") == "http://10.1.2.3:8002/metrics"


def test_metrics_history_derives_rates(monkeypatch):
    readings = iter([METRICS, METRICS.replace("} 10\n", "} 20\n", 1)])
    monkeypatch.setattr("app.triton.metrics.fetch_metrics", lambda url, timeout=2.0: parse_metrics(next(readings)))
    history = MetricsHistory("http://x/metrics", min_interval=0.0)
    history.refresh()
    history.refresh()
    rows = history.series()
    assert any(r["metric"] == "requests/s" and r["value"] > 0 for r in rows)
    assert any(r["metric"] == "in flight" and r["value"] == 3 for r in rows)
    assert any(r["metric"] == "KV cache used %" and r["value"] == 25 for r in rows)


def test_unreachable_metrics_give_a_message():
    from app.web.pages.server import charts
    from tests.servers import free_port

    history = MetricsHistory(f"http://127.0.0.1:{free_port()}/metrics")
    summary, *_ = charts(history)
    assert "metrics at http://127.0.0.1:" in summary and "cannot be read" in summary


def test_sweep_frames():
    s = summarize([record(0, 0.1, 1.0, 10, [0.1] * 9)], 1.0, settings={"concurrency": 4})
    assert set(latency_frame([s])["series"]) == {"p50", "p90", "p99"}
    assert latency_frame([s], "e2e")["ms"].max() == pytest.approx(1000.0)
    assert throughput_frame([s])["tokens/s"].tolist() == [10.0]
    assert table_frame([s])["concurrency"].tolist() == [4]


def test_throttled_updates_keep_first_and_last_and_drop_the_rest():
    from app.chat.throttle import throttled

    text = []

    def deltas():
        for word in ["a ", "b ", "c ", "d "]:
            text.append(word)
            yield word

    updates = list(throttled(deltas(), lambda: "".join(text), interval=10.0))
    assert updates == ["a ", "a b c d "]  # the first at once, then the end
    text.clear()
    assert list(throttled(deltas(), lambda: "".join(text), interval=0.0)) == ["a ", "a b ", "a b c ", "a b c d "]
    assert list(throttled(iter(()), lambda: "", interval=1.0)) == [""]


def test_speedups_mark_a_missing_matplotlib_absent(monkeypatch):
    import sys

    from app.web import speedups
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(speedups.importlib.util, "find_spec", lambda name: None)
    assert speedups.skip_missing_matplotlib() is True
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401
    monkeypatch.delitem(sys.modules, "matplotlib")
