"""Shortened soak: 64 chat sessions through the app's API for 20 s (the full run: benchmarks.soak)."""

from __future__ import annotations

import pytest

from benchmarks.harness import AppProcess, tokenizer_args
from benchmarks.soak import MEMORY_GOAL_MB, format_result, run_soak
from tests.bench_fixtures import pacing  # noqa: F401 - fixture


@pytest.fixture(scope="module")
def app(pacing, tmp_path_factory):  # noqa: F811
    """One app process for both soaks, started once: each soak reads its memory growth from its own start."""
    with AppProcess(pacing.grpc_url, "pacing", tmp_path_factory.mktemp("soak") / "app.log",
                    extra_args=tokenizer_args()) as process:
        yield process


@pytest.mark.parametrize("client", ["sse", "openai"])  # Gradio's HTTP API, the OpenAI-compatible API
def test_64_sessions_for_20_seconds(app, client):
    result = run_soak(app, sessions=64, duration=20, tokens=30, client=client, stall=20, progress=False)
    print(format_result(result))
    assert result.errors == 0, result.error_messages
    assert result.hung == 0 and result.sessions_finished == 64
    assert result.requests >= 64 * 2  # every session had several replies
    assert result.growth_mb < MEMORY_GOAL_MB
