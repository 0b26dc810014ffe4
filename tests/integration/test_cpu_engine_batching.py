"""In-flight batching through the real tritonserver: concurrent streams advance together, and the
engine's KV-cache figures reach Triton's metrics and the perf-metric outputs."""

from __future__ import annotations

import logging
import time
import urllib.request

import numpy as np
import pytest

from app.chat.prompts import PromptBuilder
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from app.triton.metrics import parse_metrics, total
from setup.cpu.engine import CpuEngineSpec
from tests.threads import run_in_threads

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)
TOKENS = 24


def _stream(triton, index: int) -> dict:
    client = TritonChatClient(triton.grpc_url)
    text = PromptBuilder(template_name="chatml").build(Conversation.asking(f"Tell me a story, number {index}."))
    start = time.monotonic()
    stamps = [time.monotonic() for _ in client.stream(text, SamplingParams(max_tokens=TOKENS),
                                                       extra={"min_length": TOKENS})]
    return {"start": start, "first": stamps[0], "end": stamps[-1], "tokens": len(stamps)}


def test_concurrent_streams_advance_together(triton):
    _stream(triton, 99)  # warm up
    lone = _stream(triton, 0)
    streams = run_in_threads(lambda i: _stream(triton, i + 1), 4)
    assert all(s["tokens"] >= TOKENS - 2 for s in streams + [lone]), streams
    assert max(s["first"] for s in streams) < min(s["end"] for s in streams), "each got tokens before any finished"
    wall = max(s["end"] for s in streams) - min(s["start"] for s in streams)
    lone_rate = lone["tokens"] / (lone["end"] - lone["start"])
    log.warning("CPU engine through Triton: 1 stream %.1f tokens/s, 4 streams %.1f tokens/s in total",
                lone_rate, sum(s["tokens"] for s in streams) / wall)


def test_kv_cache_figures_in_metrics_and_outputs(triton, cpu_model_dir):
    import tritonclient.grpc as grpcclient
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(cpu_model_dir).encode("The capital of France is")
    inputs = {"input_ids": np.array([ids], np.int32), "input_lengths": np.array([[len(ids)]], np.int32),
              "request_output_len": np.array([[4]], np.int32), "return_perf_metrics": np.array([[True]])}
    tensors = []
    for name, array in inputs.items():
        tensor = grpcclient.InferInput(name, list(array.shape), "BOOL" if array.dtype == np.bool_ else "INT32")
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    results = []
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    client.start_stream(callback=lambda result, error: results.append((result, error)))
    client.async_stream_infer("tensorrt_llm", tensors, request_id="kv", enable_empty_final_response=True)
    client.stop_stream()
    last = [r for r, e in results if e is None and r.as_numpy("output_ids") is not None][-1]
    assert int(last.as_numpy("kv_cache_alloc_total_blocks").reshape(-1)[0]) >= 1
    with urllib.request.urlopen(f"http://127.0.0.1:{triton.metrics_port}/metrics", timeout=5) as reply:
        samples = parse_metrics(reply.read().decode())
    kv, requests = "nv_trt_llm_kv_cache_block_metrics", "nv_trt_llm_request_metrics"
    assert total(samples, kv, kv_cache_block_type="max", model="tensorrt_llm") > 0
    assert total(samples, kv, kv_cache_block_type="tokens_per") == 64
    assert total(samples, requests, request_type="max", model="tensorrt_llm") == CpuEngineSpec().max_batch_size
