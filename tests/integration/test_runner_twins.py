"""The runner twins end to end (`python -m app --demo --deployment <family>` for the ten families only TensorRT-LLM's
run.py served): a real tritonserver with the multimodal_runner model, cpu_runtime's runner stand-in in place of
MultimodalModelRunner (the CPU engine, the CPU image encoder), and the app's runner kind talking to it over gRPC.
Families are grouped so one tritonserver serves several at once (one model per family, runner-<family>)."""

from __future__ import annotations

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.runner.deployment import RunnerDeployment
from app.triton.client import TritonChatClient
from cpu_runtime.family_outputs.messages import MSG_NO_BARS, MSG_NO_PAGE_TEXT
from setup.cpu.runner_demo import model_name, write_runner_demo_repository
from tests.conftest import _serve_repository, _triton_or_fail

pytestmark = pytest.mark.integration

GROUPS = (("kosmos-2", "phi-3-vision", "fuyu", "blip2-t5"), ("cogvlm", "llava-next", "neva"),
          ("nougat", "deplot", "video-neva"))
GREEDY = SamplingParams(max_tokens=48, top_k=1)
# what shows in each twin's figures: the family's own format
FORMATS = {"kosmos-2": "<grounding>", "phi-3-vision": "<|image_1|>", "fuyu": "per 30 px patch", "blip2-t5": "Question:",
           "cogvlm": "[INST]", "llava-next": "[INST]", "neva": "<extra_id_1>User", "nougat": "672x896 px",
           "deplot": "Generate underlying data table", "video-neva": "12 frames"}

# Nougat's and Deplot's twins give their family's own output (a page's markdown, a chart's table); for a photo
# without text or bars, the sentence saying so
OWN_OUTPUT = {"nougat": MSG_NO_PAGE_TEXT, "deplot": MSG_NO_BARS}


@pytest.fixture(scope="module")
def chelsea(tmp_path_factory):
    from skimage import data

    path = tmp_path_factory.mktemp("runner-pictures") / "chelsea.png"
    Image.fromarray(data.chelsea()).save(path)
    return str(path)


@pytest.fixture(scope="module", params=GROUPS, ids=["+".join(g) for g in GROUPS])
def group_served(request, tmp_path_factory, cpu_model_dir):
    tmp = tmp_path_factory.mktemp("runner-triton")
    endpoints = _triton_or_fail(lambda: _serve_repository(
        tmp, write_runner_demo_repository(tmp / "repo", request.param, log=lambda *_: None)))
    yield request.param, endpoints
    endpoints.process.stop()


def test_each_twin_answers_an_image_question_in_its_family_format(group_served, chelsea, tmp_path):
    families, endpoints = group_served
    registry = AdapterRegistry(tmp_path / "adapters")
    for family in families:
        client = TritonChatClient(endpoints.grpc_url, model=model_name(family, several=True))
        deployment = RunnerDeployment(client, registry)
        assert deployment.family == family
        stream = deployment.open_reply(ReplyRequest(Conversation.asking("What animal is in this picture?", [chelsea]),
                                                    GREEDY))
        pieces = list(stream)
        answer = stream.text.lower()
        if family in OWN_OUTPUT:  # a photo is no page nor chart: the twin says what it reads (test_family_outputs.py)
            assert stream.text == OWN_OUTPUT[family], (family, stream.text)
        else:
            assert "cat" in answer, (family, stream.text)
        assert stream.details["reply_mode"] == "whole reply" and len(pieces) == 1, family
        assert stream.details["runner_era"] == "late", family
        assert stream.details["prompt_format"].startswith(family) and FORMATS[family] in stream.details[
            "prompt_format"], (family, stream.details["prompt_format"])
        assert stream.finish_reason in ("stop", "length")


# Families whose prompt carries no question: Nougat's is empty (it reads the page), Deplot's is its fixed instruction.
NO_QUESTION = {"nougat", "deplot"}


@pytest.mark.xfail(reason="runner twins do not answer follow-up questions yet: with the chat's settings fuyu loops "
                          "('The cat is a tabby cat.' again and again; the runner's sampling has no presence/frequency "
                          "penalty), fuyu and cogvlm name no colour for the fur, video-neva echoes its prompt",
                   strict=False)
def test_each_twin_answers_three_different_questions_about_one_photo(group_served, chelsea, tmp_path):
    """The follow-up questions a new user asks (tests/integration/test_twin_answers.py's), each reply answering its
    own question, on every runner twin whose family's prompt carries the question."""
    from tests.integration.test_twin_answers import QUESTIONS, words

    families, endpoints = group_served
    registry = AdapterRegistry(tmp_path / "adapters")
    for family in (f for f in families if f not in NO_QUESTION):
        deployment = RunnerDeployment(TritonChatClient(endpoints.grpc_url, model=model_name(family, several=True)),
                                      registry)
        replies = {}
        for question in QUESTIONS:
            stream = deployment.open_reply(ReplyRequest(Conversation.asking(question, [chelsea]),
                                                        SamplingParams(max_tokens=48)))
            replies[question] = "".join(stream).strip()
        for question, accepted in QUESTIONS.items():
            assert words(replies[question]) & set(accepted), (family, question, replies)
