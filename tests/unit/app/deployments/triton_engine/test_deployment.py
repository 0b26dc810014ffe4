"""The engine topology's one image-support check: a served image family this app does not know still takes text
turns (named template, no carried image, a text probe), and an image for it is refused in a sentence."""

from __future__ import annotations

import pytest
from PIL import Image

from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest
from app.deployments.base import ReplyRequest
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.vision.messages import MSG_UNKNOWN_FAMILY
from tests.xcomposer2_fakes import FakeClient, xc2_registry


@pytest.fixture
def unknown_family(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    client = FakeClient(multimodal_family="no-such-family")
    return client, TritonEngineDeployment(client, xc2_registry(tmp_path / "adapters"))


def test_an_unknown_image_family_has_no_image_support_and_a_text_turn_still_goes(unknown_family, tmp_path):
    client, deployment = unknown_family
    assert deployment.image_support() is None
    assert deployment.template_name() == "chatml" and deployment.probe_needs_image() is False
    picture = tmp_path / "earlier.png"
    Image.new("RGB", (8, 8), "red").save(picture)
    history = Conversation((Turn.user("a picture", (Media.of(str(picture)),)), Turn.reply(ReplyVersion("I see it.")),
                            Turn.user("And now?")))
    stream = deployment.open_reply(ReplyRequest(history, system_prompt=""))
    assert "".join(stream) == "In the picture, a cat."
    prompt, extra = client.sent[0]
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith("And now?<|im_end|>\n<|im_start|>assistant\n")
    assert "image_input" not in extra  # the earlier picture is not carried: the family is not known to need it


def test_an_image_for_an_unknown_family_is_refused_in_a_sentence(unknown_family, tmp_path):
    client, deployment = unknown_family
    picture = tmp_path / "red.png"
    Image.new("RGB", (8, 8), "red").save(picture)
    with pytest.raises(InvalidRequest) as caught:
        deployment.open_reply(ReplyRequest(Conversation.asking("What is this?", [str(picture)])))
    assert str(caught.value) == MSG_UNKNOWN_FAMILY.format(family="no-such-family")
    assert client.sent == []


def test_warm_up_builds_the_prompt_builder_the_first_reply_uses(unknown_family, monkeypatch):
    """The app calls warm_up() as it starts, so the first reply does not wait for the tokenizer to load."""
    import app.deployments.triton_engine.deployment as module

    built = []
    real = module.PromptBuilder
    monkeypatch.setattr(module, "PromptBuilder", lambda **kwargs: built.append(kwargs) or real(**kwargs))
    _, deployment = unknown_family
    deployment.warm_up()
    assert len(built) == 1
    first = deployment.prompts()
    assert len(built) == 1 and first is deployment.prompts()


def test_warm_up_leaves_a_failure_to_the_first_reply(unknown_family, monkeypatch):
    import app.deployments.triton_engine.deployment as module

    def broken(**kwargs):
        raise OSError("no tokenizer here")

    monkeypatch.setattr(module, "PromptBuilder", broken)
    _, deployment = unknown_family
    deployment.warm_up()  # no exception on the app's start thread
    with pytest.raises(OSError, match="no tokenizer here"):
        deployment.prompts()
