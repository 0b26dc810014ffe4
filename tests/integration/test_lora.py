"""LoRA end to end through a real tritonserver running the CPU engine (BLS -> tensorrt_llm)."""

from __future__ import annotations

import shutil

import pytest

from app.adapters.registry import AdapterRegistry
from app.chat.prompts import PromptBuilder
from app.core.conversation import Conversation
from app.core.errors import LoraCacheFull
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from setup.cpu.model import model_dir
from setup.lora.convert import convert_peft, save_converted
from tests.lora_helpers import DEMO_ADAPTERS
from tests.run_folder import stop_in_background
from tests.servers import start_triton
from tests.threads import run_in_threads

QUESTION = "What is the capital of France?"
GREEDY = SamplingParams(max_tokens=20)
PIRATE_WORDS = ("arr", "matey", " be ", "ahoy")
FRENCH_WORDS = ("la capitale", " est ", " le ", " la ")


def looks_pirate(text: str) -> bool:
    return any(w in f" {text.lower()} " for w in PIRATE_WORDS)


def looks_french(text: str) -> bool:
    return any(w in f" {text.lower()} " for w in FRENCH_WORDS) and not looks_pirate(text)


STYLE = {"pirate": looks_pirate, "pirate-npy": looks_pirate, "french": looks_french}


@pytest.fixture(scope="module")
def prompt() -> str:
    return PromptBuilder(tokenizer_dir=str(model_dir())).build(Conversation.asking(QUESTION))


@pytest.fixture
def adapters(tmp_path):
    """pirate and french (PEFT folders) plus pirate-npy, a converted pair: three task ids."""
    root = tmp_path / "adapters"
    for name in ("pirate", "french"):
        shutil.copytree(DEMO_ADAPTERS / name, root / name)
    save_converted(convert_peft(DEMO_ADAPTERS / "pirate", "float16"), root / "pirate-npy")
    return root


@pytest.fixture(scope="module")
def small_cache(tmp_path_factory):
    """A server whose LoRA host cache holds one demo adapter; 'french' is prefetched at start."""
    tmp = tmp_path_factory.mktemp("lora-small-cache")
    root = tmp / "adapters"
    shutil.copytree(DEMO_ADAPTERS / "french", root / "french")
    registry = AdapterRegistry(root)
    weights, _ = registry.tensors("french")
    prefetch = registry.write_prefetch_dir(tmp / "prefetch")
    (prefetch / "not-a-task-id").mkdir()
    endpoints = start_triton(tmp, overrides={"lora_cache_host_memory_bytes": int(weights.nbytes * 1.5),
                                             "lora_prefetch_dir": str(prefetch)})
    yield endpoints, registry.task_id("french")
    stop_in_background(endpoints.process.stop, "the small-cache tritonserver")


def test_prefetched_adapter_answers_with_the_task_id_alone(small_cache, prompt, tmp_path):
    endpoints, french_id = small_cache
    client = TritonChatClient(endpoints.grpc_url)
    text = client.generate(prompt, GREEDY, {"lora_task_id": french_id})
    assert looks_french(text), text
    log = (endpoints.repo.parent / "triton.log").read_text()
    assert "not-a-task-id" in log and "digits only" in log


def test_alternating_adapters_survive_eviction(small_cache, adapters, prompt):
    endpoints, _ = small_cache
    registry, client = AdapterRegistry(adapters), TritonChatClient(endpoints.grpc_url)
    order = ["pirate", "french", "pirate-npy", "pirate", "french", "pirate-npy"]
    ids = {name: registry.task_id(name) for name in STYLE}
    assert len(set(ids.values())) == 3
    results = []
    for name in order:
        stream = registry.stream(client, name, prompt, GREEDY)
        text = "".join(stream)
        results.append((name, text, stream.retried, stream.weights_sent))
        assert STYLE[name](text), f"{name}: {text!r}"
    # the cache holds one adapter: every switch evicts, and the client recovers by re-sending once
    assert [r[3] for r in results] == [True] * 6
    assert [r[2] for r in results[3:]] == [True, True, True], results
    again = registry.stream(client, "pirate-npy", prompt, GREEDY)
    assert looks_pirate("".join(again)) and not again.weights_sent and again.lora_bytes_sent == 8


def test_cache_full_of_running_tasks_is_reported(small_cache, adapters, prompt):
    endpoints, _ = small_cache
    registry, client = AdapterRegistry(adapters), TritonChatClient(endpoints.grpc_url)
    long_run = registry.stream(client, "pirate", prompt, SamplingParams(max_tokens=400, top_k=50, seed=1))
    try:
        next(long_run)  # pirate is now in use on the server
        with pytest.raises(LoraCacheFull):
            registry.generate(client, "french", prompt, GREEDY)
    finally:
        long_run.cancel()
    assert not registry.info("french").held_by_server


def test_first_request_sends_weights_later_ones_do_not(triton, adapters, prompt):
    registry, client = AdapterRegistry(adapters), TritonChatClient(triton.grpc_url)
    size = sum(a.nbytes for a in registry.tensors("pirate"))
    first = registry.stream(client, "pirate", prompt, GREEDY)
    assert looks_pirate("".join(first)) and first.lora_bytes_sent == size + 8
    later = [registry.stream(client, "pirate", prompt, GREEDY) for _ in range(2)]
    for stream in later:
        assert looks_pirate("".join(stream)) and stream.lora_bytes_sent == 8 and not stream.retried
    registry.forget_server_state()  # e.g. after a restart: weights travel again (the server accepts them)
    resent = registry.stream(client, "pirate", prompt, GREEDY)
    assert looks_pirate("".join(resent)) and resent.lora_bytes_sent == size + 8


def test_concurrent_requests_with_different_adapters(triton, adapters, prompt):
    registry, client = AdapterRegistry(adapters), TritonChatClient(triton.grpc_url)
    names = ["pirate", "french", None]
    texts = run_in_threads(lambda i: registry.generate(client, names[i], prompt, GREEDY), 3)
    base = client.generate(prompt, GREEDY)
    assert looks_pirate(texts[0]) and looks_french(texts[1]), texts
    assert texts[2] == base and not looks_pirate(base) and not looks_french(base), texts


def test_weights_without_task_id_are_refused(triton, adapters, prompt):
    registry, client = AdapterRegistry(adapters), TritonChatClient(triton.grpc_url)
    weights, config = registry.tensors("pirate")
    with pytest.raises(Exception, match="lora_task_id must be set for LoRA inference"):
        client.generate(prompt, GREEDY, {"lora_weights": weights, "lora_config": config})


def test_adapter_through_the_ensemble(triton, adapters, prompt):
    registry, client = AdapterRegistry(adapters), TritonChatClient(triton.grpc_url, model="ensemble")
    first = registry.stream(client, "french", prompt, GREEDY)
    assert looks_french("".join(first)) and first.weights_sent
    later = registry.stream(client, "french", prompt, GREEDY)
    assert looks_french("".join(later)) and later.lora_bytes_sent == 8
