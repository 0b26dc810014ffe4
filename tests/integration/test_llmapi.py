"""The Triton llmapi topology on a real tritonserver: the served config against upstream's facts, streaming,
Stop on the server (client cancel and the `stop` request), adapters by path with the LRU, images, refusals,
and the 0.19 release's text-only model.

The chat, adapters, images and streaming tests of test_gradio_api.py and test_openai_api.py also run against
this topology (the `demo_app` fixture); this file holds what is particular to it.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
import yaml

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest, TextOnlyDeployment
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.llmapi.deployment import LlmApiDeployment
from app.deployments.llmapi.stream import LlmApiStream, send_llmapi_stop
from app.triton.client import TritonChatClient
from app.triton.declared_inputs import build_inputs
from setup.catalog.llmapi_releases import LATEST, llmapi_releases
from tests.lora_helpers import DEMO_ADAPTERS
from tests.run_folder import stop_in_background
from tests.servers import start_llmapi_triton

UPSTREAM = Path(__file__).parents[1] / "data" / "upstream"
FRANCE = Conversation.asking("What is the capital of France?")
GREEDY = SamplingParams(max_tokens=30, top_k=1)


def deployment(server, registry: AdapterRegistry | None = None, **kwargs) -> LlmApiDeployment:
    from setup.cpu.model import model_dir

    return LlmApiDeployment(TritonChatClient(server.grpc_url, model="tensorrt_llm"), registry or AdapterRegistry(),
                            tokenizer_dir=str(model_dir()), **kwargs)


def reply(dep: LlmApiDeployment, adapter: str | None = None, messages=FRANCE, params=GREEDY) -> LlmApiStream:
    stream = dep.open_reply(ReplyRequest(messages, params, adapter))
    for _ in stream:
        pass
    return stream


def stand_in_log(server) -> list[str]:
    return [line for line in server.process.log_path.read_text().splitlines() if "llmapi cpu stand-in: request" in line]


def test_served_config_matches_upstream_tensor_for_tensor(llmapi_triton):
    served = TritonChatClient(llmapi_triton.grpc_url, model="tensorrt_llm").model_config("tensorrt_llm")
    facts = yaml.safe_load((UPSTREAM / llmapi_releases()[LATEST].checked_against / "llmapi.yaml").read_text())
    model = facts["models"]["tensorrt_llm"]
    inputs = [{"name": t["name"], "data_type": t["data_type"], "dims": [int(d) for d in t["dims"]],
               "optional": bool(t.get("optional", False))} for t in served["input"]]
    outputs = [{"name": t["name"], "data_type": t["data_type"], "dims": [int(d) for d in t["dims"]]}
               for t in served["output"]]
    assert inputs == model["inputs"] and outputs == model["outputs"]
    assert served["backend"] == "python" and served["model_transaction_policy"]["decoupled"]


def test_reply_cut_at_max_tokens_finishes_with_length(llmapi_triton):
    stream = reply(deployment(llmapi_triton), params=SamplingParams(max_tokens=3, top_k=1))
    assert stream.text and stream.finish_reason == "length"


def test_continue_goes_on_with_a_cut_reply(llmapi_triton):
    dep = deployment(llmapi_triton)
    whole = reply(dep, params=SamplingParams(max_tokens=24, top_k=1))
    cut = reply(dep, params=SamplingParams(max_tokens=4, top_k=1))
    rest = dep.open_reply(ReplyRequest(FRANCE, SamplingParams(max_tokens=20, top_k=1), continues=cut.text))
    list(rest)
    assert (cut.text + rest.text).startswith(whole.text[:len(cut.text) + 8]), (cut.text, rest.text, whole.text)


def test_streams_paris_with_finish_reason_and_kv_figures(llmapi_triton):
    stream = reply(deployment(llmapi_triton))
    assert "Paris" in stream.text and stream.chunks >= 3
    assert stream.finish_reason == "stop" and stream.details_line().startswith("finished: stop · KV cache: ")
    assert stream.details["kv_cache_alloc_total_blocks"] >= 1
    assert stream.details["arrival_time_ns"] <= stream.details["first_token_time_ns"] <= \
        stream.details["last_token_time_ns"]


@pytest.mark.parametrize("how", ["the app's Stop", "stop request"])
def test_stop_ends_generation_on_the_server(llmapi_triton, how):
    """The app's Stop closes the call and sends the `stop` request; the request alone ends the stream too."""
    dep = deployment(llmapi_triton)
    before = len(stand_in_log(llmapi_triton))
    stream = dep.open_reply(ReplyRequest(Conversation.asking("Write a very long story about a dragon."),
                                         SamplingParams(max_tokens=400)))
    for index, _ in enumerate(stream):
        if index == 2:
            if how == "the app's Stop":
                stream.cancel()
            else:  # the model's own `stop` request with the same id; the stream then ends by itself
                assert send_llmapi_stop(llmapi_triton.grpc_url, "tensorrt_llm", stream.request_id)
    deadline = time.monotonic() + 10
    while len(stand_in_log(llmapi_triton)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    line = stand_in_log(llmapi_triton)[-1]
    assert stream.request_id in line, line
    assert int(re.search(r"ended after (\d+) tokens", line).group(1)) < 40, line
    if how == "stop request":
        assert "(stop)" in line and stream.details["finish_reason"] == "cancelled" and not stream.cancelled
    assert stream.finish_reason is None  # a stopped reply ended neither by itself nor at max_tokens
    assert "Paris" in reply(dep).text  # the slot is free again


def test_adapters_switch_per_message_and_match_the_engine_path(llmapi_triton, app_served):
    dep = deployment(llmapi_triton)
    texts = {adapter: reply(dep, adapter).text for adapter in ("pirate", None, "french", "pirate")}
    assert texts["pirate"].startswith("Arr") and "capitale" in texts["french"] and "Paris" in texts[None]
    engine = app_served[0].deployment  # the engine-path demo: same core, same adapter, same greedy words
    assert reply_text(engine, "pirate") == texts["pirate"]


def reply_text(dep, adapter) -> str:
    stream = dep.open_reply(ReplyRequest(FRANCE, GREEDY, adapter))
    for _ in stream:
        pass
    return stream.text


def test_evicted_adapter_is_read_again_from_its_path(tmp_path):
    server = start_llmapi_triton(tmp_path, overrides={"lora": {"max_lora_rank": 64, "max_loras": 1,
                                                               "max_cpu_loras": 1}})
    try:
        dep = deployment(server)
        answers = [reply(dep, adapter).text for adapter in ("pirate", "french", "pirate", "french")]
        assert answers[0] == answers[2] and answers[1] == answers[3] and answers[0] != answers[1]
    finally:
        server.process.stop()


def test_shared_adapters_folder_gets_a_copy_on_first_use(llmapi_triton, tmp_path):
    own = tmp_path / "app-adapters"
    shutil.copytree(DEMO_ADAPTERS / "pirate", own / "pirate")
    shared = tmp_path / "shared-mount"
    shared.mkdir()
    dep = deployment(llmapi_triton, AdapterRegistry(own), server_adapters_dir=shared)
    assert reply(dep, "pirate").text.startswith("Arr")
    assert (shared / "pirate" / "adapter_config.json").is_file()
    assert not [p for p in shared.iterdir() if p.name.startswith(".")]  # no half-copied folder left


def test_server_that_cannot_see_the_adapter_is_named(llmapi_triton):
    client = TritonChatClient(llmapi_triton.grpc_url, model="tensorrt_llm")
    info = client.model_info()
    values = {"text_input": "hi", "streaming": True, "lora_id": 9, "lora_name": "pirate",
              "lora_path": "/nowhere/pirate"}
    stream = LlmApiStream(client.url, info, build_inputs(info, values), 30.0, "/nowhere/pirate")
    with pytest.raises(InvalidRequest, match="cannot read adapter 'pirate' at /nowhere/pirate"):
        list(stream)
    partial = {"text_input": "hi", "streaming": True, "lora_id": 9}
    with pytest.raises(InvalidRequest, match="lora_id, lora_name, and lora_path must all be provided together"):
        list(LlmApiStream(client.url, info, build_inputs(info, partial), 30.0, None))
    local = {"text_input": "hi", "streaming": True, "image_url": ["file:///etc/passwd"]}
    with pytest.raises(InvalidRequest, match="local paths and file:// URLs are refused"):
        list(LlmApiStream(client.url, info, build_inputs(info, local), 30.0, None))


def test_two_images_are_read(llmapi_triton, tmp_path):
    from PIL import Image, ImageDraw, ImageFont

    paths = []
    for name, text in (("a", "The secret code is 4711"), ("b", "Room 42")):
        image = Image.new("RGB", (900, 260), "white")
        ImageDraw.Draw(image).text((30, 90), text, fill="black", font=ImageFont.load_default(size=64))
        image.save(tmp_path / f"{name}.png")
        paths.append(str(tmp_path / f"{name}.png"))
    dep = deployment(llmapi_triton)
    stream = dep.open_reply(ReplyRequest(Conversation.asking("What is the secret code?", paths), GREEDY))
    assert "4711" in "".join(stream)


@pytest.fixture(scope="module")
def release_0_19(tmp_path_factory):
    server = start_llmapi_triton(tmp_path_factory.mktemp("llmapi-0.19"),
                                 overrides={"trtllm_version": "0.19", "lora": None, "multimodal": False})
    yield server
    stop_in_background(server.process.stop, "the llmapi 0.19 tritonserver")


def test_release_0_19_serves_text_and_refuses_adapters_and_images_plainly(release_0_19, tmp_path):
    dep = deployment(release_0_19)
    assert "stop" not in dep.client.model_info().inputs  # Stop closes the call there
    assert "Paris" in reply(dep).text
    with pytest.raises(InvalidRequest, match="declares no lora_id/lora_name/lora_path inputs"):
        dep.open_reply(ReplyRequest(FRANCE, GREEDY, "pirate"))
    image = tmp_path / "x.png"
    from PIL import Image

    Image.new("RGB", (64, 64), "white").save(image)
    with pytest.raises(TextOnlyDeployment, match="text-only"):
        dep.check_images([str(image)], "what is this?")
