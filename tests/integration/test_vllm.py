"""The app against a real third-party OpenAI-compatible server: vLLM's CPU build with smollm2 + pirate + french.

Every surface goes through the deployment interface, so these drive the chat path, Compare, the Adapters
tab's runtime add and check, the Benchmark sweep, the Server tab's metrics and `python -m app bench --openai`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid

import pytest

from app.chat.adapter_check import check_adapter_applied
from app.chat.compare import CompareRun
from app.chat.turns import open_stream, stream_reply
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams
from setup.paths import PROJECT_ROOT
from tests.integration.vllm_fixtures import metrics_value, zero_b_adapter

PIRATE = re.compile(r"\b(arr|matey|ahoy|ye|be|savvy)\b", re.I)
QUESTION = Conversation.asking("What is the capital of France?")


@pytest.fixture
def ctx(vllm, tmp_path) -> AppContext:
    return AppContext(AppConfig(openai_url=vllm.url, adapters_dir=str(tmp_path / "adapters")))


def final_reply(ctx, adapter, history=QUESTION, max_tokens=24) -> tuple[str, int]:
    updates = list(stream_reply(ctx, "s", history, SamplingParams(max_tokens=max_tokens), adapter=adapter))
    reply = updates[-1].reply.current  # the shown version: words, warning, figures line (as the chat shows them)
    return "\n".join(part for part in (reply.text, reply.note, reply.figures) if part), len(updates)


def test_model_list_and_status(ctx):
    status = ctx.deployment.status()
    assert status.live and status.ready and "vllm" in status.server
    assert ctx.deployment.model == "smollm2"
    assert {"pirate", "french"} <= set(ctx.deployment.adapter_names())


def test_the_audit_knows_the_shapes_of_the_model_vllm_loaded(ctx):
    target = ctx.deployment.lora_target()  # vLLM lists the folder it loaded as the base model's root
    assert target.num_layers == 30 and target.vocab_size == 49152 and target.module_shape("q_proj") == (576, 576)


def test_the_server_sized_its_kv_cache_as_told(vllm):
    """The peer starts the same way on any machine: its KV cache is the explicit size, not a share of free memory."""
    from benchmarks.peer_vllm import KV_CACHE_BYTES

    if vllm.log_path is None:
        pytest.skip("a vLLM started elsewhere (VLLM_TEST_URL): its log is not ours to read")
    told = re.search(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache", vllm.log_path.read_text())
    assert told, "vLLM's log does not say it used the explicit KV-cache size"
    assert float(told.group(1)) == pytest.approx(KV_CACHE_BYTES / 2**30, abs=0.01)


def test_chat_streams_and_the_adapter_changes_the_style(ctx):
    base, updates = final_reply(ctx, None)
    assert "Paris" in base and not PIRATE.search(base) and updates > 2
    pirate, _ = final_reply(ctx, "pirate")
    assert PIRATE.search(pirate) and " · pirate · OpenAI-compatible server" in pirate  # the figures line names it
    french, _ = final_reply(ctx, "french")
    assert "capitale" in french.lower()


def test_unknown_adapter_is_a_plain_sentence(ctx):
    with pytest.raises(InvalidRequest, match="There is no adapter named 'nope'"):
        open_stream(ctx, QUESTION, SamplingParams(max_tokens=4), None, "nope")


def test_images_to_a_text_only_model_are_refused_in_a_sentence(ctx):
    from app.core.errors import TextOnlyDeployment
    from tests.unit.app.deployments.openai_compat.test_wire import png_bytes

    with pytest.raises(TextOnlyDeployment, match="takes no images: smollm2 is not a multimodal model."):
        open_stream(ctx, Conversation.asking("What is it?", [png_bytes()]), SamplingParams(max_tokens=4), None, None)


def test_compare_streams_base_and_both_adapters(ctx):
    run = CompareRun(ctx, "What is the capital of France?", [None, "pirate", "french"], SamplingParams(max_tokens=32))
    seen_together = False
    for texts in run.updates():
        seen_together |= all(texts) and not run.done()
    base, pirate, french = run.texts()
    assert seen_together and "Paris" in base and PIRATE.search(pirate) and "capitale" in french.lower()


def test_stop_cancels_the_request_on_the_server(ctx, vllm):
    stream = open_stream(ctx, Conversation.asking("Write a very long story about a dragon."),
                         SamplingParams(max_tokens=1500), None, None)
    for count, _ in enumerate(stream):
        if count == 3:
            break
    assert metrics_value(vllm.url, "vllm:num_requests_running") >= 1
    stream.cancel()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and metrics_value(vllm.url, "vllm:num_requests_running") != 0:
        time.sleep(0.2)
    assert metrics_value(vllm.url, "vllm:num_requests_running") == 0 and stream.cancelled


def test_adapter_check_passes_for_pirate_and_warns_for_a_zero_adapter(ctx, tmp_path):
    assert check_adapter_applied(ctx.deployment, "pirate").applied is True
    name = f"flat-{uuid.uuid4().hex[:6]}"
    zero_b_adapter(PROJECT_ROOT / "adapters" / "pirate", tmp_path / "source")
    ctx.adapters.add_folder(tmp_path / "source", name)
    assert "run time" in ctx.deployment.register_adapter(name, ctx.adapters.folder / name)
    result = check_adapter_applied(ctx.deployment, name)
    assert result.applied is False and "does not seem to be applied" in result.message
    reply, _ = final_reply(ctx, name, max_tokens=8)  # the chat shows the warning on first use
    assert "does not seem to be applied" in reply


def test_runtime_add_makes_a_new_adapter_usable(ctx):
    name = f"buccaneer-{uuid.uuid4().hex[:6]}"
    ctx.adapters.add_folder(PROJECT_ROOT / "adapters" / "pirate", name)
    assert name not in ctx.deployment.adapter_names()
    ctx.deployment.register_adapter(name, ctx.adapters.folder / name)
    assert name in ctx.deployment.adapter_names()
    assert next(a for a in ctx.deployment.adapters() if a.name == name).held_by_server is True
    reply, _ = final_reply(ctx, name)
    assert PIRATE.search(reply)


def test_benchmark_tab_sweep_and_server_metrics(ctx, vllm):
    from app.bench.sweep import check_deployment, sweep
    from app.triton.metrics import MetricsHistory

    check_deployment(ctx.deployment)
    done = sweep(ctx.deployment, [1, 2], 2, 8, 8)
    assert [s.errors for s in done] == [0, 0] and all(s.output_tokens_per_second > 0 for s in done)
    history = MetricsHistory(ctx.deployment.metrics_url(), min_interval=0.0)
    history.refresh()
    assert history.error is None and history.snapshots[-1].active is not None
    assert history.snapshots[-1].models == ("smollm2",)


@pytest.mark.parametrize("extra", [[], ["--adapter", "pirate"]])
def test_bench_cli_against_vllm(vllm, extra):
    argv = [sys.executable, "-m", "app", "bench", "--openai", vllm.url, "--model", "smollm2", "--num-requests", "4",
            "--concurrency", "2", "--input-len", "8", "--output-len", "8", "--no-progress", "--json", *extra]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert summary["completed"] == 4 and summary["errors"] == 0


def test_the_server_tabs_cache_section_shows_vllms_own_lora_figures(ctx, vllm):
    """After a reply through pirate, vLLM's vllm:lora_requests_info (the name recorded for 0.32.0) names pirate
    among the adapters in use lately, with max_loras 1 (the peer's default), and the Server tab's cache section and
    its API fields (the session's server: this vLLM) say so."""
    from app.web.pages import server

    reply, _ = final_reply(ctx, "pirate", max_tokens=4)
    assert reply
    figures = ctx.deployment.lora_cache().figures
    assert figures is not None and figures.source == "vllm:lora_requests_info (vLLM 0.32.0)"
    assert "pirate" in figures.recent + figures.in_use and figures.max_loras == 1 and figures.states >= 1
    fields = server.cache_api_fields(server.session_view(ctx, None))
    assert fields["source"] == "server" and "pirate" in fields["recent"] + fields["in_use"]
    assert fields["max_loras"] == 1
    shown = server.cache_section(ctx)
    assert "vllm:lora_requests_info (vLLM 0.32.0)" in shown and "pirate" in shown and "(max loras): 1" in shown
