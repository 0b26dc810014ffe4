"""The engine topology talking to an InternLM-XComposer2 deployment (served family internlm-xcomposer2): the query
with exactly one <ImageHere>, the image as FP16 [1, 3, 490, 490], the model's own Partial LoRA on every request
(weights once, then the task id), and the refusals (other adapters, text-only messages, a second marker)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from app.core.conversation import Conversation, ReplyVersion, Turn
from app.core.errors import InvalidRequest, TooManyImages
from app.deployments import messages as M
from app.deployments.base import ReplyRequest
from app.deployments.messages import MSG_OWN_ADAPTER_MISSING, MSG_OWN_ADAPTER_ONLY
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.web.labels import adapter_of, base_label
from tests.xcomposer2_fakes import CLIP_MEAN, CLIP_STD, FakeClient, xc2_registry


@pytest.fixture
def adapters(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))  # task ids file inside tmp_path
    return xc2_registry(tmp_path / "adapters")


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (200, 100), (255, 0, 0)).save(path)
    return str(path)


def deployment(registry, client=None, own="xc2-partial"):
    return TritonEngineDeployment(client or FakeClient(), registry, template="internlm2", model_adapter=own)


def ask(text, picture=None):
    return Conversation.asking(text, [picture] if picture else ())


def run(dep, request):
    stream = dep.open_reply(request)
    for _ in stream:
        pass
    return stream


def test_query_has_one_marker_in_the_family_template_and_the_image_is_fp16_1x3x490x490(adapters, picture):
    client = FakeClient()
    run(deployment(adapters, client), ReplyRequest(ask("What is this <ImageHere>?", picture), system_prompt=""))
    prompt, extra = client.sent[0]
    assert prompt == ("[UNUSED_TOKEN_146]user\n<ImageHere>What is this ?[UNUSED_TOKEN_145]\n"
                      "[UNUSED_TOKEN_146]assistant\n")
    pixels = extra["image_input"]
    assert pixels.shape == (1, 3, 490, 490) and pixels.dtype == np.float16
    red = (np.array([1.0, 0.0, 0.0], np.float32) - CLIP_MEAN) / CLIP_STD  # a plain red picture, CLIP-normalised
    assert np.allclose(pixels[0, :, 245, 245].astype(np.float32), red, atol=2e-3)
    assert "[UNUSED_TOKEN_145]" in extra["stop_words"]


def test_the_family_template_is_used_unless_another_is_asked_for(adapters, picture):
    """No --template: the served config's family (internlm-xcomposer2) names internlm2; --template still wins."""
    for template, opening in ((None, "[UNUSED_TOKEN_146]user\n<ImageHere>"), ("chatml", "<|im_start|>user\n<ImageHere>")):
        client = FakeClient()
        dep = TritonEngineDeployment(client, adapters, template=template, model_adapter="xc2-partial")
        run(dep, ReplyRequest(ask("What is this?", picture), system_prompt=""))
        assert client.sent[0][0].startswith(opening), client.sent[0][0]
    assert TritonEngineDeployment(FakeClient(), adapters).template_name() == "internlm2"
    cpu_demo = FakeClient(multimodal_family="cpu-ocr")  # its family says "tokenizer": the tokenizer's own, else chatml
    assert TritonEngineDeployment(cpu_demo, adapters).template_name() == "chatml"


def test_own_adapter_goes_with_weights_once_then_by_task_id_alone(adapters, picture):
    client = FakeClient()
    dep = deployment(adapters, client)
    first = run(dep, ReplyRequest(ask("Describe it.", picture)))
    second = run(dep, ReplyRequest(ask("And now?", picture), adapter=None))
    task = adapters.task_id("xc2-partial")
    (_, one), (_, two) = client.sent
    assert one["lora_task_id"] == task and one["lora_weights"].dtype == np.float16 and "lora_config" in one
    assert two["lora_task_id"] == task and "lora_weights" not in two and "lora_config" not in two
    assert first.lora_bytes_sent == 8 + one["lora_weights"].nbytes + one["lora_config"].nbytes
    assert second.lora_bytes_sent == 8 and second.adapter == "xc2-partial"


def test_the_dropdown_cannot_turn_the_own_adapter_off(adapters):
    dep = deployment(adapters)
    assert dep.built_in_adapter() == "xc2-partial"
    assert dep.adapter_names() == ["pirate"]  # the model's own adapter is the base entry, not a choice

    class Ctx:
        deployment = dep

    label = base_label(Ctx)
    assert "xc2-partial" in label and adapter_of(label) is None


def test_another_adapter_is_refused_in_a_sentence_unless_the_deployment_combines(adapters, picture):
    client = FakeClient()
    with pytest.raises(InvalidRequest) as caught:
        deployment(adapters, client).open_reply(ReplyRequest(ask("Hi", picture), adapter="pirate"))
    assert str(caught.value) == MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'",
                                                            adapter="pirate")
    assert client.sent == []
    combining = FakeClient(combines_adapters="true")
    run(deployment(adapters, combining), ReplyRequest(ask("Hi", picture), adapter="pirate"))
    assert combining.sent[0][1]["lora_task_id"] == adapters.task_id("pirate")


def test_a_missing_own_adapter_is_named(adapters, picture):
    with pytest.raises(InvalidRequest) as caught:
        deployment(adapters, own="absent").open_reply(ReplyRequest(ask("Hi", picture)))
    assert str(caught.value) == MSG_OWN_ADAPTER_MISSING.format(family="InternLM-XComposer2", own="absent")


def test_without_a_configured_adapter_the_server_applies_its_own(adapters, picture):
    client = FakeClient()
    run(deployment(adapters, client, own=None), ReplyRequest(ask("Hi", picture)))
    assert not any(name.startswith("lora_") for name in client.sent[0][1])


def test_text_only_messages_and_extra_markers_are_refused(adapters, picture):
    dep = deployment(adapters)
    with pytest.raises(InvalidRequest) as caught:
        dep.open_reply(ReplyRequest(ask("Hello")))
    assert str(caught.value) == M.MSG_IMAGE_REQUIRED.format(family="InternLM-XComposer2")
    with pytest.raises(InvalidRequest) as caught:
        dep.open_reply(ReplyRequest(ask("What is it?", picture), system_prompt="Look at <ImageHere> first."))
    assert str(caught.value) == M.MSG_IMAGE_MARKERS.format(marker="<ImageHere>", count=2)


def test_two_images_are_refused(adapters, picture):
    history = Conversation.asking("Both?", [picture, picture])
    with pytest.raises(TooManyImages, match="at most 1 image"):
        deployment(adapters).open_reply(ReplyRequest(history))


def test_a_follow_up_question_is_about_the_conversations_latest_picture(adapters, picture):
    client = FakeClient()
    history = ask("What is it?", picture).with_turn(Turn.reply(ReplyVersion("In the picture, a red square."))) \
        .with_turn(Turn.user("Which colour is it?"))
    run(deployment(adapters, client), ReplyRequest(history))
    prompt, extra = client.sent[0]
    assert extra["image_input"].shape == (1, 3, 490, 490) and prompt.count("<ImageHere>") == 1
    assert "<ImageHere>Which colour is it?" in prompt and "What is it?" in prompt  # marker at the latest question
