"""The adapter cache made visible (#50): a real CPU tritonserver whose LoRA host cache holds two demo adapters gets
three; the Server tab's API (`adapter_cache`) shows which are resident, the eviction the app met and the re-send."""

from __future__ import annotations

import shutil

import pytest
from gradio_client import Client

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from setup.lora.convert import convert_peft, save_converted
from tests.lora_helpers import DEMO_ADAPTERS
from tests.run_folder import stop_in_background
from tests.servers import free_port, start_triton

SHORT = SamplingParams(max_tokens=2)


@pytest.fixture(scope="module")
def two_adapter_cache(tmp_path_factory):
    """pirate, french and pirate-npy (three task ids of one size) and a server whose host cache holds two."""
    tmp = tmp_path_factory.mktemp("lora-two-cache")
    adapters = tmp / "adapters"
    for name in ("pirate", "french"):
        shutil.copytree(DEMO_ADAPTERS / name, adapters / name)
    save_converted(convert_peft(DEMO_ADAPTERS / "pirate", "float16"), adapters / "pirate-npy")
    weights, _ = AdapterRegistry(adapters).tensors("pirate")
    endpoints = start_triton(tmp, overrides={"lora_cache_host_memory_bytes": int(weights.nbytes * 2.5)})
    yield endpoints, adapters
    stop_in_background(endpoints.process.stop, "the two-adapter-cache tritonserver")


@pytest.fixture(scope="module")
def app_on_it(two_adapter_cache):
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    endpoints, adapters = two_adapter_cache
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=endpoints.grpc_url, port=port, demo=True, adapters_dir=str(adapters)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def reply(ctx, adapter: str) -> str:
    stream = ctx.deployment.open_reply(ReplyRequest(Conversation.asking("Hello"), SHORT, adapter=adapter))
    return "".join(stream)


def test_three_adapters_in_a_cache_for_two(app_on_it):
    ctx, url = app_on_it
    for adapter in ("pirate", "french", "pirate-npy", "pirate"):  # the third evicts pirate; pirate comes back
        assert reply(ctx, adapter).strip()
    cache = Client(url, verbose=False).predict(api_name="/adapter_cache")
    rows = {row["name"]: row for row in cache["adapters"]}
    assert cache["evictions"] == 1 and cache["capacity_estimate"] == 2
    assert (rows["pirate"]["sent"], rows["pirate"]["misses"], rows["pirate"]["resent"]) == (1, 1, 1)
    assert cache["resident"] == ["pirate-npy", "pirate"]  # french, the least recently used, made room
    assert reply(ctx, "pirate-npy").strip()  # resident indeed: the task id alone is answered
    rows = {row["name"]: row for row in Client(url, verbose=False).predict(api_name="/adapter_cache")["adapters"]}
    assert rows["pirate-npy"]["hits"] == 1 and rows["pirate-npy"]["misses"] == 0
