"""The app against NVIDIA Dynamo's OpenAI frontend routing to mocker workers (benchmarks.peer_dynamo): smollm2
on two workers and a second model, smollm2-b, which the app lists like an adapter served as a model name.

The mocker emits tokens of SmolLM2's vocabulary at simulated engine speed, not a model's text, so these
check flow — model list, streaming, Stop, Compare, the Benchmark sweep and CLI — not content.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from app.bench.sweep import check_deployment, sweep
from app.chat.compare import CompareRun
from app.chat.turns import open_stream, stream_reply
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from setup.paths import PROJECT_ROOT
from tests.integration.vllm_fixtures import metrics_value

QUESTION = Conversation.asking("What is the capital of France?")
INFLIGHT = "dynamo_frontend_inflight_requests"


@pytest.fixture
def ctx(dynamo, tmp_path) -> AppContext:
    return AppContext(AppConfig(openai_url=dynamo.url, openai_model="smollm2", adapters_dir=str(tmp_path / "adapters")))


def test_model_list_and_status(ctx):
    status = ctx.deployment.status()
    assert status.live and status.ready
    assert ctx.deployment.model == "smollm2"
    assert ctx.deployment.adapter_names() == ["smollm2-b"]


def test_chat_streams_through_the_router(ctx):
    updates = list(stream_reply(ctx, "s", QUESTION, SamplingParams(max_tokens=16)))
    assert len(updates) > 2
    assert updates[-1].reply is not None and updates[-1].reply.text.strip()


def test_stop_ends_the_request_at_the_frontend(ctx, dynamo):
    stream = open_stream(ctx, Conversation.asking("Write a very long story about a dragon."),
                         SamplingParams(max_tokens=4000), None, None)
    for count, _ in enumerate(stream):
        if count == 3:
            break
    assert metrics_value(dynamo.url, INFLIGHT) >= 1
    stream.cancel()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and metrics_value(dynamo.url, INFLIGHT) != 0:
        time.sleep(0.2)
    assert metrics_value(dynamo.url, INFLIGHT) == 0 and stream.cancelled


def test_compare_streams_columns_together(ctx):
    run = CompareRun(ctx, "Tell me about the sea.", [None, "smollm2-b"], SamplingParams(max_tokens=64))
    seen_together = False
    for texts in run.updates():
        seen_together |= all(texts) and not run.done()
    assert seen_together and all(text.strip() for text in run.texts())


def test_benchmark_sweep_through_the_router(ctx):
    check_deployment(ctx.deployment)
    done = sweep(ctx.deployment, [1, 4], 4, 8, 8)
    assert [s.errors for s in done] == [0, 0] and all(s.output_tokens_per_second > 0 for s in done)


def test_bench_cli_against_dynamo(dynamo):
    argv = [sys.executable, "-m", "app", "bench", "--openai", dynamo.url, "--model", "smollm2", "--num-requests", "8",
            "--concurrency", "4", "--input-len", "8", "--output-len", "8", "--no-progress", "--json"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert summary["completed"] == 8 and summary["errors"] == 0


def _listening_addresses(pids: set[int]) -> list[str]:
    """host:port (hex, as /proc/net/tcp writes it) of the TCP sockets that `pids` or their children listen on."""
    from setup.launcher.procfs import process_table, socket_inodes

    family = set(pids)
    for pid, ppid, *_ in process_table():  # children (the mocker's workers) too
        if ppid in family:
            family.add(pid)
    inodes = set().union(*(socket_inodes(pid) for pid in family))
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(table).read().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.append(fields[1])
    return found


def test_dynamo_serves_and_connects_on_loopback_only(dynamo):
    """The frontend, the request plane and the advertised event-plane endpoints are on 127.0.0.1. Dynamo 1.6.1
    binds its ZMQ event publishers to 0.0.0.0 whatever DYN_EVENT_PLANE_HOST says (that sets only the address it
    advertises, which is loopback, so no traffic leaves the machine): those, named in its log, are the only
    sockets allowed off loopback."""
    import re

    pids = {proc.pid for proc in (dynamo.frontend, *dynamo.mockers)}
    listening = _listening_addresses(pids)
    assert listening, "the frontend listens at least on its HTTP port"
    logs = re.sub(r"\x1b\[[0-9;]*m", "", "".join(proc.log_path.read_text() for proc in (dynamo.frontend, *dynamo.mockers)))
    publishers = {int(port) for port in re.findall(r"ZMQ PUB transport bound.*?endpoint=tcp://0\.0\.0\.0:(\d+)", logs)}
    advertised = set(re.findall(r"advertised endpoint public_endpoint=tcp://([\d.]+):", logs))
    assert advertised == {"127.0.0.1"}, advertised
    loopback = ("0100007F:", "00000000000000000000000001000000:")  # 127.0.0.1 and ::1 as /proc/net/tcp writes them
    outside = {int(address.rsplit(":", 1)[1], 16) for address in listening if not address.startswith(loopback)}
    assert outside <= publishers, (outside, publishers)
