"""The app's default limit of replies at once, read from a real tritonserver: the served model's max_batch_size (at
least 256); past it the OpenAI-compatible API answers 429 with a sentence naming the limit."""

from __future__ import annotations

import pytest

from benchmarks.harness import pacing_server
from setup.cpu.pacing import PacingSpec
from tests.bench_fixtures import pacing, serve_app  # noqa: F401 - fixture

pytestmark = pytest.mark.integration


def test_the_limit_follows_the_served_batch(pacing, tmp_path):  # noqa: F811
    from app.api.openai_routes import OpenAIApi
    from app.chat.context import AppConfig, AppContext

    small = AppContext(AppConfig(triton_url=pacing.grpc_url, model="pacing"))  # max_batch_size 64
    assert small.deployment.batch_size() == 64 and OpenAIApi(small).concurrency == 256
    with pacing_server(tmp_path, PacingSpec(tokens_per_second=20, max_batch_size=384)) as big:
        blocks, _, ctx = serve_app(big.grpc_url)  # as `python -m app` starts: the limit settled once
        try:
            assert ctx.config.concurrency == 384 and blocks._queue.default_concurrency_limit == 384
        finally:
            blocks.close()
    given = AppContext(AppConfig(triton_url=pacing.grpc_url, model="pacing", concurrency=8))
    assert OpenAIApi(given).concurrency == 8
