"""Triton's metrics on the Server tab: the app's model counted alone, gaps left as gaps."""

from __future__ import annotations

import math

from app.triton.metrics import MetricsHistory, Snapshot, parse_metrics

ENSEMBLE_TEXT = """
# 2 chats through the ensemble: every request also calls preprocessing, the engine and postprocessing per token
nv_inference_request_success{model="ensemble",version="1"} 2
nv_inference_request_success{model="preprocessing",version="1"} 2
nv_inference_request_success{model="tensorrt_llm",version="1"} 2
nv_inference_request_success{model="postprocessing",version="1"} 64
nv_inference_request_duration_us{model="ensemble",version="1"} 4000000
nv_inference_request_duration_us{model="postprocessing",version="1"} 64000
nv_inference_count{model="ensemble",version="1"} 2
"""


def test_requests_of_the_app_model_only():
    samples = parse_metrics(ENSEMBLE_TEXT)
    assert Snapshot.of(samples, 0.0, model="ensemble").success == 2
    assert Snapshot.of(samples, 0.0, model="ensemble").request_us == 4_000_000
    assert Snapshot.of(samples, 0.0).success == 70  # every model's requests, as before
    assert Snapshot.of(samples, 0.0, model="not-there").success == 70  # unknown model: all rather than nothing


def test_series_leaves_a_gap_where_readings_stopped():
    history = MetricsHistory("http://unused", min_interval=1.0)
    history.snapshots.extend([Snapshot(at=0.0, success=0, pending=0), Snapshot(at=1.0, success=4, pending=1),
                              Snapshot(at=61.0, success=10, pending=0), Snapshot(at=62.0, success=12, pending=0)])
    rows = history.series()
    rate = [(r["t"], r["value"]) for r in rows if r["metric"] == "requests/s"]
    assert rate[0] == (-61.0, 4.0) and math.isnan(rate[1][1]) and rate[2] == (0.0, 2.0)  # no 6-per-60 s ramp
    queued = sorted((r["t"], r["value"]) for r in rows if r["metric"] == "queued")
    assert [t for t, v in queued if math.isnan(v)] == [-31.0]
