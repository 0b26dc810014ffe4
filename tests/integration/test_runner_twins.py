"""The runner twins end to end (`python -m app --demo --twin <family>` for the families the runner topology
serves: the ten only TensorRT-LLM's run.py served, and Qwen2-VL, Mllama, LLaVA-OneVision): a real tritonserver with the multimodal_runner model, cpu_runtime's runner stand-in in place of
MultimodalModelRunner (the CPU engine, the CPU image encoder), and the app's runner kind talking to it over gRPC.
Families are grouped so one tritonserver serves several at once (one model per family, runner-<family>)."""

from __future__ import annotations

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.messages import MSG_RUNNER_PENALTIES
from app.deployments.runner.deployment import RunnerDeployment
from app.triton.client import TritonChatClient
from cpu_runtime.family_outputs.messages import MSG_NO_BARS, MSG_NO_PAGE_TEXT
from setup.cpu.runner_demo import model_name, write_runner_demo_repository
from tests.pictures import chelsea_picture
from tests.server_lifetimes import finish_fixtures
from tests.servers import FAMILY_OUTPUT_TWINS, serve_repository, triton_or_fail

pytestmark = pytest.mark.integration

# the first group is the session's family-outputs server (tests/servers.py FAMILY_OUTPUT_TWINS)
LATE_ONLY = ("qwen2-vl", "mllama", "llava-onevision")  # the families only the 0.16 and 1.x runners serve
GROUPS = (FAMILY_OUTPUT_TWINS, ("phi-3-vision", "fuyu", "blip2-t5"), ("cogvlm", "llava-next", "neva"), LATE_ONLY)
# plain greedy: no presence/frequency penalty, so the runner kind sends no repetition penalty in their place
GREEDY = SamplingParams(max_tokens=48, top_k=1, presence_penalty=0.0, frequency_penalty=0.0)
# what shows in each twin's figures: the family's own format
FORMATS = {"kosmos-2": "<grounding>", "phi-3-vision": "<|image_1|>", "fuyu": "per 30 px patch", "blip2-t5": "Question:",
           "cogvlm": "[INST]", "llava-next": "[INST]", "neva": "<extra_id_1>User", "nougat": "672x896 px",
           "deplot": "Generate underlying data table", "video-neva": "12 frames",
           "qwen2-vl": "<|vision_start|><|image_pad|><|vision_end|>", "mllama": "<|image|>",
           "llava-onevision": "<|im_start|>user <image>"}

# Nougat's and Deplot's twins give their family's own output (a page's markdown, a chart's table); for a photo
# without text or bars, the sentence saying so
OWN_OUTPUT = {"nougat": MSG_NO_PAGE_TEXT, "deplot": MSG_NO_BARS}
# The runner cannot stream these ([V], [X]): encoder-decoder LLMs (EncDecModelRunner has no streaming) and mllama's own
# LLM call; every other family's reply streams through its LLM runner (model_repo_templates/multimodal_runner).
WHOLE_REPLY = {"nougat", "deplot", "blip2-t5", "mllama"}


@pytest.fixture(scope="module")
def chelsea(tmp_path_factory):
    return str(chelsea_picture(tmp_path_factory.mktemp("runner-pictures") / "chelsea.png"))


@pytest.fixture(scope="module", params=GROUPS, ids=["+".join(g) for g in GROUPS])
def group_served(request, tmp_path_factory, cpu_model_dir):
    if request.param == FAMILY_OUTPUT_TWINS:
        yield request.param, request.getfixturevalue("family_outputs_triton")
        return
    # The family-outputs server's other tests ran before this module (same group, collected first): stop it now, so
    # it and this group's server (~5-6 GiB each) are never resident together. A later test would start it again.
    finish_fixtures(request._pyfuncitem, ["family_outputs_triton"])
    tmp = tmp_path_factory.mktemp("runner-triton")
    endpoints = triton_or_fail(lambda: serve_repository(
        tmp, write_runner_demo_repository(tmp / "repo", request.param, log=lambda *_: None)))
    yield request.param, endpoints
    endpoints.process.stop()


# Families whose prompt carries no question: Nougat's prompt is empty (it reads the page), Deplot's is its fixed
# instruction (the table of the figure's data, whatever was asked). Kosmos-2's twin gives the family's own output,
# the grounded caption of what the picture shows (<phrase> and <object> boxes), whatever the question.
NO_QUESTION = {"nougat", "deplot", "kosmos-2"}
VIDEO_ONLY = {"video-neva"}


def check_family_format(family: str, stream, pieces: list[str]) -> None:
    """What a reply of `family`'s twin must show: its family's prompt format and era in the figures, streamed or
    whole as its runner can, finished by its end token or the token limit."""
    if family in WHOLE_REPLY:
        assert stream.details["reply_mode"] == "whole reply" and len(pieces) == 1, family
        assert stream.details_line().startswith("whole reply · "), stream.details_line()
    else:  # several responses, each new text, adding up to the reply
        assert stream.details["reply_mode"] == "streamed" and len(pieces) > 1, (family, pieces)
        assert "".join(pieces) == stream.text and stream.details_line().startswith("streamed · "), family
    assert stream.details["runner_era"] == "1.x", family
    # the family's prompt: the runner's own template (the twin's prompt_format), or, for the families whose runner
    # uses the text as sent, the one the app wrote (its note)
    written = " ".join(note for note in stream.notes if note.startswith("prompt written by the app"))
    assert stream.details["prompt_format"].startswith(family), (family, stream.details["prompt_format"])
    assert FORMATS[family] in stream.details["prompt_format"] + written, (family, stream.details, stream.notes)
    assert stream.finish_reason in ("stop", "length")


@pytest.mark.parametrize("group_served", [FAMILY_OUTPUT_TWINS], indirect=True, ids=["+".join(FAMILY_OUTPUT_TWINS)])
def test_the_twins_without_a_question_answer_in_their_family_format(group_served, chelsea, tmp_path):
    """The families whose prompt carries no question, asked greedily (no presence/frequency penalty, so the runner
    kind sends no repetition penalty in their place); every other family's format is checked on its first reply
    in the next test."""
    families, endpoints = group_served
    registry = AdapterRegistry(tmp_path / "adapters")
    asked = [family for family in families if family in NO_QUESTION]
    assert asked, families
    for family in asked:
        deployment = RunnerDeployment(TritonChatClient(endpoints.grpc_url, model=model_name(family, several=True)),
                                      registry)
        assert deployment.family == family
        stream = deployment.open_reply(ReplyRequest(Conversation.asking("What animal is in this picture?", [chelsea]),
                                                    GREEDY))
        pieces = list(stream)
        # greedy, no penalty asked: at most the note that the app wrote the family's prompt (its runner uses text as sent)
        assert all(note.startswith("prompt written by the app") for note in stream.notes), (family, stream.notes)
        if family in OWN_OUTPUT:  # a photo is no page nor chart: the twin says what it reads (test_family_outputs.py)
            assert stream.text == OWN_OUTPUT[family], (family, stream.text)
        else:
            assert "cat" in stream.text.lower(), (family, stream.text)
            assert "What animal" not in stream.text, (family, stream.text)  # the answer, the question not repeated
        check_family_format(family, stream, pieces)


def test_each_twin_answers_three_different_questions_about_one_photo(group_served, chelsea, tmp_path):
    """The follow-up questions a new user asks (tests/integration/test_twin_answers.py's), with the chat's default
    settings, each reply answering its own question, on every runner twin whose family's prompt carries the
    question; the first reply also shows the family's format (check_family_format). The runner reads no
    presence/frequency penalty: the runner kind sends a mild repetition penalty in their place
    (app.core.sampling.REPETITION_FOR_PENALTIES) and says so."""
    from tests.integration.test_twin_answers import QUESTIONS, words

    families, endpoints = group_served
    registry = AdapterRegistry(tmp_path / "adapters")
    # video-neva's runner reads a video only (its photo is refused; its video: test_family_outputs.py)
    for family in (f for f in families if f not in NO_QUESTION and f not in VIDEO_ONLY):
        deployment = RunnerDeployment(TritonChatClient(endpoints.grpc_url, model=model_name(family, several=True)),
                                      registry)
        assert deployment.family == family
        replies = {}
        for index, question in enumerate(QUESTIONS):
            stream = deployment.open_reply(ReplyRequest(Conversation.asking(question, [chelsea]),
                                                        SamplingParams(max_tokens=48)))
            pieces = list(stream)
            replies[question] = "".join(pieces).strip()
            penalties = MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES)
            # the penalties' stand-in said, or (encoder-decoder LLMs) that the settings were not applied; and at most
            # the app's prompt note besides
            said = [note for note in stream.notes if not note.startswith("prompt written by the app")]
            assert said == [penalties] or (len(said) == 1 and "not applied" in said[0]), (family, stream.notes)
            if index == 0:
                check_family_format(family, stream, pieces)
        for question, accepted in QUESTIONS.items():
            assert words(replies[question]) & set(accepted), (family, question, replies)


@pytest.mark.parametrize("group_served", [LATE_ONLY], indirect=True, ids=["+".join(LATE_ONLY)])
def test_the_late_only_twins_keep_their_runners_rules(group_served, chelsea, tmp_path):
    """[V]: mllama answers a question without a picture (cross-attention skipped) and takes no LoRA task;
    LLaVA-OneVision takes a video instead of an image (8 frames); Qwen2-VL needs a picture."""
    import cv2
    import numpy as np

    families, endpoints = group_served
    registry = AdapterRegistry(tmp_path / "adapters")
    deployments = {f: RunnerDeployment(TritonChatClient(endpoints.grpc_url, model=model_name(f, several=True)),
                                       registry) for f in families}
    mllama = deployments["mllama"]
    stream = mllama.open_reply(ReplyRequest(Conversation.asking("What is the capital of France?", []), GREEDY))
    assert "paris" in "".join(stream).lower(), stream.text
    assert not mllama.takes_lora() and mllama.adapter_names() == []
    video = tmp_path / "chelsea.avi"
    frame = cv2.cvtColor(np.asarray(Image.open(chelsea).convert("RGB")), cv2.COLOR_RGB2BGR)
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 8, (frame.shape[1], frame.shape[0]))
    for _ in range(16):
        writer.write(frame)
    writer.release()
    onevision = deployments["llava-onevision"]
    assert onevision.takes_video()
    stream = onevision.open_reply(ReplyRequest(Conversation.asking("What animal is in this video?", [str(video)]),
                                               GREEDY))
    assert "cat" in "".join(stream).lower(), stream.text
    with pytest.raises(Exception, match="The qwen2-vl twin needs a picture"):
        list(deployments["qwen2-vl"].open_reply(ReplyRequest(Conversation.asking("Hello?", []), GREEDY)))
