"""The InternLM-XComposer2 CPU twin end to end (`python -m app --demo --twin xcomposer2`): a real tritonserver
with the community topology (preprocessing runs the CPU perception encoder, one <ImageHere>, Partial LoRA on every
request, the CPU engine with has_partial_lora_mask), and the app's engine kind talking to it."""

from __future__ import annotations

import time

import numpy as np
import pytest

from app.core.conversation import Conversation
from app.core.errors import ChatError, InvalidRequest
from app.core.sampling import SamplingParams
from app.deployments import messages as M
from app.deployments.base import ReplyRequest
from app.deployments.messages import MSG_OWN_ADAPTER_ONLY
from app.triton.client import TritonChatClient
from tests.pictures import chelsea_picture, shape_picture

GREEDY = SamplingParams(max_tokens=16)
OPENING = "In the picture"  # how the twin's Partial LoRA makes image answers start


@pytest.fixture(scope="module")
def red_circle(tmp_path_factory):
    return str(shape_picture(tmp_path_factory.mktemp("xc2-images") / "circle.png"))


@pytest.fixture(scope="module")
def chelsea(tmp_path_factory):
    return chelsea_picture(tmp_path_factory.mktemp("xc2-chelsea") / "chelsea.png")


def ask(deployment, picture, text="What is in this picture?", adapter=None):
    stream = deployment.open_reply(ReplyRequest(Conversation.asking(text, [picture]), GREEDY, adapter))
    for _ in stream:
        pass
    return stream


def test_weights_go_once_then_the_task_id_alone_and_answers_open_as_trained(xcomposer2_app_served, red_circle):
    ctx, _ = xcomposer2_app_served
    registry, own = ctx.adapters, ctx.deployment.built_in_adapter()
    assert own == "xc2-partial" and ctx.deployment.adapter_names() == []
    registry.forget_server_state()
    first = ask(ctx.deployment, red_circle)
    weights, config = registry.tensors(own)
    assert first.weights_sent and first.lora_bytes_sent == 8 + weights.nbytes + config.nbytes
    second = ask(ctx.deployment, red_circle, "Describe the image.")
    assert not second.weights_sent and second.lora_bytes_sent == 8
    for stream in (first, second):
        assert stream.text.strip().startswith(OPENING), stream.text
    assert "red" in (first.text + second.text).lower()


def test_a_task_the_server_does_not_hold_gets_its_weights_again(xcomposer2_app_served, red_circle, tmp_path):
    """Eviction or a restart: the app believes the server holds the task, the server does not. Its 'not in cache'
    answer makes the stream re-send the weights once (the registry's retry), and the reply comes."""
    import shutil

    from app.adapters.registry import AdapterRegistry
    from app.deployments.triton_engine.deployment import TritonEngineDeployment

    ctx, _ = xcomposer2_app_served
    own = ctx.deployment.built_in_adapter()
    folder = tmp_path / "adapters"
    shutil.copytree(ctx.adapters.folder / own, folder / own)
    config = folder / own / "adapter_config.json"
    config.write_text(config.read_text() + "\n")  # same adapter, new files: an id this server never saw
    registry = AdapterRegistry(folder)
    task_id = registry.task_id(own)
    assert task_id != ctx.adapters.task_id(own)
    registry.mark_held(task_id)
    deployment = TritonEngineDeployment(ctx.deployment.client, registry, model_adapter=own)
    stream = ask(deployment, red_circle)
    assert stream.retried and stream.weights_sent
    assert stream.text.strip().startswith(OPENING), stream.text


def test_preprocessing_refuses_requests_without_the_partial_lora(xcomposer2_triton):
    client = TritonChatClient(xcomposer2_triton.grpc_url, model="ensemble")
    pixels = np.zeros((1, 3, 490, 490), np.float16)
    with pytest.raises(ChatError, match="Partial LoRA must be active"):
        client.generate("<ImageHere>What is this?", GREEDY, {"image_input": pixels})
    with pytest.raises(ChatError, match="exactly once"):
        client.generate("No marker here.", GREEDY, {"image_input": pixels, "lora_task_id": 1})


def test_text_only_and_other_adapters_are_refused_in_a_sentence(xcomposer2_app_served, red_circle):
    ctx, _ = xcomposer2_app_served
    with pytest.raises(InvalidRequest) as caught:
        ctx.deployment.open_reply(ReplyRequest(Conversation.asking("Hello"), GREEDY))
    assert str(caught.value) == M.MSG_IMAGE_REQUIRED.format(family="InternLM-XComposer2")
    with pytest.raises(InvalidRequest) as caught:
        ask(ctx.deployment, red_circle, adapter="pirate")
    assert str(caught.value) == MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'",
                                                            adapter="pirate")


def test_gradio_api_answers_an_image_question(xcomposer2_app_served, red_circle):
    from gradio_client import Client, handle_file

    ctx, url = xcomposer2_app_served
    client = Client(url, verbose=False)
    ctx.adapters.forget_server_state()  # as after a server restart: the next request carries the weights
    weights, config = ctx.adapters.tensors(ctx.deployment.built_in_adapter())
    for question, sent, with_weights in (("What do you see?", 8 + weights.nbytes + config.nbytes, True),
                                         ("Describe the picture.", 8, False)):
        reply = client.predict(text=question, images=[handle_file(red_circle)], max_tokens=16, api_name="/generate")
        assert reply.strip().startswith(OPENING), reply
        # the Server tab's figures (a reading at most once a second): what the request sent of the adapter
        deadline, figures = time.monotonic() + 10, {}
        while time.monotonic() < deadline and figures.get("lora_bytes_last_request") != sent:
            figures = client.predict(api_name="/server_figures")
        assert figures["lora_bytes_last_request"] == sent and figures["lora_weights_last_request"] is with_weights
    with pytest.raises(Exception, match="attach an image"):
        client.predict(text="Hello", max_tokens=8, api_name="/generate")


def test_the_adapter_check_asks_about_a_picture_and_names_the_models_own_adapter(xcomposer2_app_served):
    """A text probe is refused here (image questions only) and would not show a Partial LoRA anyway: the check's
    probe asks about its picture, and the model's own adapter is said to be part of it, not "not applied"."""
    from app.chat import messages as CM
    from app.chat.adapter_check import PROBE_IMAGE_PROMPT, check_adapter_applied
    from app.vision.probe_picture import probe_picture

    ctx, _ = xcomposer2_app_served
    assert ctx.deployment.probe_needs_image() and not ctx.deployment.combines_adapters()
    probe = ctx.deployment.probe(None, PROBE_IMAGE_PROMPT, 4, (probe_picture(),))
    assert probe.tokens[0].startswith("In the"), probe  # the Partial LoRA, on with the base entry, opens the answer
    result = check_adapter_applied(ctx.deployment, "xc2-partial")
    assert result.applied is None and result.message == CM.MSG_CHECK_BUILT_IN.format(adapter="xc2-partial")


def test_the_twin_answers_three_different_questions_about_one_photo(xcomposer2_app_served, chelsea):
    """As every CPU twin does (tests/integration/test_twin_answers.py): asked here, on the twin's own server, so the
    XComposer2 server and the llmapi one are in different groups of the server pass (never both held by one)."""
    from tests.integration.test_twin_answers import check_three_answers

    check_three_answers("xcomposer2", xcomposer2_app_served[0], chelsea)
