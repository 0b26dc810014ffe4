"""The template twins end to end (`python -m app --demo --twin <family>` for blip2-opt, llava-1.5, vila, gpt
and llama): each family's own repository (the multimodal template, or inflight_batcher_llm for the text families)
on a real tritonserver with the CPU engine and, for image families, the CPU image encoder; the app's engine kind
talks to it over gRPC. Each template's models have fixed names, so one tritonserver serves one family at a time
(module-scoped, one after the other)."""

from __future__ import annotations

import pytest

from app.adapters.registry import AdapterRegistry
from app.chat.model_saw import saw_lines
from app.core.conversation import Conversation
from app.core.errors import TextOnlyDeployment
from app.core.messages import MSG_TEXT_ONLY
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.triton.client import TritonChatClient
from setup.catalog.builds import families as build_families
from setup.cpu.family_twins import template_twins, write_family_twin_repository
from tests.pictures import chelsea_picture
from tests.servers import serve_repository, triton_or_fail

pytestmark = pytest.mark.integration

GREEDY = SamplingParams(max_tokens=48, top_k=1)
# what the encoder's report says each image twin applied: the family's pixels, rows and user text
FORMATS = {"blip2-opt": ("224x224 px stretch", "32 rows", "Question: {text} Answer:"),
           "llava-1.5": ("336x336 px shortest_side_crop", "576 rows"),
           "vila": ("384x384 px stretch", "196 rows")}


@pytest.fixture(scope="module")
def chelsea(tmp_path_factory):
    return str(chelsea_picture(tmp_path_factory.mktemp("family-twin-pictures") / "chelsea.png"))


@pytest.fixture(scope="module", params=template_twins())
def twin_served(request, tmp_path_factory, cpu_model_dir):
    """(family, its engine deployment) with the family's twin on a tritonserver of its own."""
    tmp = tmp_path_factory.mktemp(f"twin-{request.param}")
    endpoints = triton_or_fail(lambda: serve_repository(
        tmp, write_family_twin_repository(tmp / "repo", request.param, log=lambda *_: None)))
    client = TritonChatClient(endpoints.grpc_url, model="tensorrt_llm_bls")
    yield request.param, TritonEngineDeployment(client, AdapterRegistry(tmp / "adapters"))
    endpoints.process.stop()


def test_the_image_twins_are_the_ones_with_formats_here():
    assert {f for f in template_twins() if build_families()[f].is_multimodal} == set(FORMATS)


def test_each_twin_answers_in_its_family_format_or_refuses_an_image_when_text_only(twin_served, chelsea):
    family, deployment = twin_served
    if family not in FORMATS:  # a text family: no image input, a clear sentence for a picture, text answered
        assert deployment.image_support() is None
        with pytest.raises(TextOnlyDeployment) as refused:
            deployment.open_reply(ReplyRequest(Conversation.asking("What is in this picture?", [chelsea]), GREEDY))
        assert str(refused.value) == MSG_TEXT_ONLY
        stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is the capital of France?"), GREEDY))
        assert "paris" in "".join(stream).lower(), (family, stream.text)
        return
    support = deployment.image_support()
    assert support is not None and support.family.name == family
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What animal is in this picture?", [chelsea]),
                                                GREEDY))
    answer = "".join(stream).lower()
    assert "cat" in answer, (family, answer)
    seen = [" ".join(lines) for lines in saw_lines(stream.image_report())]
    assert len(seen) == 1 and f"Family format: {family}:" in seen[0], (family, seen)
    for part in FORMATS[family]:
        assert part in seen[0], (family, part, seen[0])


def test_each_image_twin_answers_three_different_questions_about_one_photo(twin_served, chelsea):
    """The follow-up questions a new user asks (tests/integration/test_twin_answers.py's), with the chat's default
    settings, each reply answering its own question."""
    from tests.integration.test_twin_answers import ANSWER_TOKENS, QUESTIONS, words

    family, deployment = twin_served
    if family not in FORMATS:
        pytest.skip(f"{family} is a text family: its image refusal is checked above")
    replies = {}
    for question in QUESTIONS:
        stream = deployment.open_reply(ReplyRequest(Conversation.asking(question, [chelsea]),
                                                    SamplingParams(max_tokens=ANSWER_TOKENS)))
        replies[question] = "".join(stream).strip()
    for question, accepted in QUESTIONS.items():
        assert words(replies[question]) & set(accepted), (family, question, replies)
