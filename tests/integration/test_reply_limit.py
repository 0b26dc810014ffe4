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
    from app.context import AppConfig, AppContext

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


def test_many_chats_through_the_gradio_api_get_every_word_in_order_in_fewer_updates(pacing):  # noqa: F811
    """24 chats at once (past 10 the updates are spaced): each update extends the last, the last is the whole reply
    as the pacing model sends it, and a reply of 20 words comes in fewer than 20 updates."""
    from app.bench.load import BenchRequest, run_load, session_pool
    from app.bench.targets import word_count
    from benchmarks.app_senders import SseApiSender

    blocks, url, _ = serve_app(pacing.grpc_url)
    sender = SseApiSender(url, 24, count_tokens=word_count)
    updates: dict[str, list[str]] = {}
    original = sender._read

    def recording(session, request, timeline):
        seen = updates.setdefault(request.prompt, [])
        update = timeline.update

        def record(text, now):
            if isinstance(text, str) and (not seen or text != seen[-1]):
                seen.append(text)
            update(text, now)

        timeline.update = record
        original(session, request, timeline)

    sender._read = recording
    try:
        requests = [BenchRequest(f"chat {i}", max_tokens=20) for i in range(24)]
        records, _ = run_load(session_pool(sender, 24), requests, 24)
    finally:
        sender.close()
        blocks.close()
    whole = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa " \
            "quebec romeo sierra tango"
    assert [r.error for r in records] == [None] * 24
    for seen in updates.values():
        assert all(b.startswith(a) for a, b in zip(seen, seen[1:], strict=False)) and seen[-1].strip() == whole
        assert len(seen) < 20
