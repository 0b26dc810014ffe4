"""benchmarks.peer_vllm: the vLLM CPU server's command sizes its KV cache explicitly, the same on every machine."""

from __future__ import annotations

from pathlib import Path

from benchmarks.peer_vllm import KV_CACHE_BYTES, MAX_MODEL_LEN, server_argv

# SmolLM2-135M-Instruct's attention: 30 layers, 3 KV heads of 64, stored in float32 by the peer.
KV_BYTES_PER_TOKEN = 2 * 30 * 3 * 64 * 4


def test_the_kv_cache_is_a_size_not_a_share_of_free_memory():
    argv = server_argv(Path("/venv/bin/python"), Path("/model"), 8123, {"pirate": Path("/a/pirate")})
    assert "--gpu-memory-utilization" not in argv
    assert argv[argv.index("--kv-cache-memory-bytes") + 1] == str(KV_CACHE_BYTES)
    assert argv[argv.index("--max-model-len") + 1] == str(MAX_MODEL_LEN)
    assert argv[argv.index("--lora-modules") + 1] == "pirate=/a/pirate"


def test_the_kv_cache_holds_several_full_length_requests():
    assert KV_CACHE_BYTES // KV_BYTES_PER_TOKEN >= 4 * MAX_MODEL_LEN
