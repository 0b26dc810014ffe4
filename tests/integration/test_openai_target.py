"""The app as a client of its own OpenAI-compatible API (`--openai http://127.0.0.1:PORT/v1` of a running demo):
the same surfaces through the deployment interface, with adapters as model names and no log-probabilities."""

from __future__ import annotations

import re
import time

import pytest

from app.chat.adapter_check import check_adapter_applied
from app.chat.compare import CompareRun
from app.chat.turns import open_stream, stream_reply
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams

PIRATE = re.compile(r"\b(arr|matey|ahoy|ye|be|savvy)\b", re.I)
QUESTION = Conversation.asking("What is the capital of France?")


@pytest.fixture
def ctx(app_served, tmp_path) -> AppContext:
    demo, app_url = app_served
    # Other tests' registries give their own task ids to the session's Triton server (test_lora's french may
    # now sit under the id the demo app's pirate has): the demo app sends its weights again.
    demo.adapters.forget_server_state()
    return AppContext(AppConfig(openai_url=app_url + "v1", adapters_dir=str(tmp_path / "adapters")))


def test_lists_the_demo_model_and_its_adapters(ctx):
    status = ctx.deployment.status()
    assert status.live and status.ready and "triton" in status.server
    assert ctx.deployment.model == "tensorrt_llm_bls" and ctx.deployment.adapters_as() == "model"
    assert {"pirate", "french"} <= set(ctx.deployment.adapter_names())


def test_chat_streams_with_and_without_an_adapter(ctx):
    updates = list(stream_reply(ctx, "s", QUESTION, SamplingParams(max_tokens=16), adapter="pirate"))
    assert len(updates) > 2 and PIRATE.search(updates[-1].reply.text)
    base = list(stream_reply(ctx, "s", QUESTION, SamplingParams(max_tokens=16)))[-1].reply.text
    assert "Paris" in base and not PIRATE.search(base)


def test_stop_ends_the_stream_and_the_next_request_works(ctx):
    stream = open_stream(ctx, Conversation.asking("Write a long story."), SamplingParams(max_tokens=400),
                         None, None)
    next(iter(stream))
    started = time.monotonic()
    stream.cancel()
    assert list(stream) == [] and stream.cancelled and time.monotonic() - started < 2
    reply = list(stream_reply(ctx, "s", QUESTION, SamplingParams(max_tokens=8)))[-1].reply
    assert "⚠️" not in reply.current.note + reply.text


def test_compare_and_the_adapter_check_by_greedy_tokens(ctx):
    run = CompareRun(ctx, "What is the capital of France?", [None, "pirate"], SamplingParams(max_tokens=16))
    *_, (base, pirate) = run.updates()
    assert "Paris" in base and PIRATE.search(pirate)
    result = check_adapter_applied(ctx.deployment, "pirate")
    assert result.applied is True and "greedy first tokens" in result.message
