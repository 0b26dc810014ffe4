"""'Is the adapter really applied?' where a text probe cannot tell: on InternLM-XComposer2 (answers only about an
image; its Partial LoRA acts only at image rows) both probes ask about a small picture drawn with Pillow, and the
model's own adapter is reported as part of the model rather than "not applied"."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from app.chat import messages as CM
from app.chat.adapter_check import PROBE_IMAGE_PROMPT, PROBE_PROMPT, AdapterChecks, check_adapter_applied
from app.deployments.base import Probe
from app.deployments.model_lora import MSG_OWN_ADAPTER_ONLY
from app.deployments.triton_engine import TritonEngineDeployment
from app.vision.probe_picture import probe_picture
from tests.xcomposer2_fakes import FakeClient, FakeStream, xc2_registry


class TextDeployment:
    """A deployment a text probe shows adapters on; records each probe."""

    kind, url, model = "fake", "fake://", "fake"

    def __init__(self, pirate_text: str = "Arr, Paris"):
        self.probes, self.pirate_text = [], pirate_text

    def built_in_adapter(self):
        return None

    def probe_needs_image(self):
        return False

    def probe(self, adapter, prompt, tokens, images=()):
        self.probes.append((adapter, prompt, tuple(images)))
        return Probe(tokens=(self.pirate_text if adapter else "Paris",))


class LoraTextClient(FakeClient):
    """Answers by the adapter task the request carries, as a server applying it would."""

    def stream(self, prompt, params, extra):
        self.sent.append((prompt, dict(extra)))
        return FakeStream((f"In the picture (task {extra.get('lora_task_id')})",))


@pytest.fixture
def xc2(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    registry = xc2_registry(tmp_path / "adapters")

    def make(**parameters):
        client = LoraTextClient(**parameters)
        return TritonEngineDeployment(client, registry, template="internlm2", model_adapter="xc2-partial"), client
    return make


def test_the_picture_is_small_and_the_same_every_time():
    data = probe_picture()
    assert data is probe_picture() and len(data) < 4096
    assert Image.open(io.BytesIO(data)).size == (224, 224)


def test_a_text_deployment_is_probed_with_text_alone():
    deployment = TextDeployment()
    result = check_adapter_applied(deployment, "pirate")
    assert result.applied is True and "on the probe prompt its first tokens differ" in result.message
    assert deployment.probes == [(None, PROBE_PROMPT, ()), ("pirate", PROBE_PROMPT, ())]
    same = check_adapter_applied(TextDeployment(pirate_text="Paris"), "pirate")
    assert same.applied is False and same.message.startswith("⚠️")


def test_xcomposer2_probes_ask_about_the_picture_and_tell_a_combined_adapter_apart(xc2):
    deployment, client = xc2(combines_adapters="true")
    assert deployment.probe_needs_image()
    result = check_adapter_applied(deployment, "pirate")
    assert result.applied is True, result.message
    assert result.message == CM.MSG_APPLIED.format(adapter="pirate", probe=CM.PROBE_WITH_PICTURE,
                                                   how="greedy first tokens")
    assert len(client.sent) == 2
    for prompt, extra in client.sent:
        assert prompt.count("<ImageHere>") == 1 and PROBE_IMAGE_PROMPT in prompt
        assert extra["image_input"].shape == (1, 3, 490, 490)


def test_the_models_own_adapter_is_said_to_be_part_of_it_not_unapplied(xc2):
    deployment, client = xc2()
    result = check_adapter_applied(deployment, "xc2-partial")
    assert result.applied is None and result.message == CM.MSG_CHECK_BUILT_IN.format(adapter="xc2-partial")
    assert client.sent == []  # nothing to compare with, so nothing is asked


def test_an_adapter_the_deployment_cannot_combine_is_refused_in_the_checks_sentence(xc2):
    deployment, _ = xc2()
    result = check_adapter_applied(deployment, "pirate")
    refusal = MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'", adapter="pirate")
    assert result.applied is None and result.message == CM.MSG_CHECK_FAILED.format(adapter="pirate", error=refusal)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the crash, on purpose
def test_a_check_that_crashes_does_not_keep_replies_waiting():
    class Broken(TextDeployment):
        def probe(self, adapter, prompt, tokens, images=()):
            raise RuntimeError("bug")

    checks, deployment = AdapterChecks(), Broken()
    checks.start(deployment, "pirate")
    assert checks.result(deployment, "pirate", wait=5.0) is None
    assert not checks._running  # the next use runs it again
