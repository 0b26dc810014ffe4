"""The families whose text TensorRT-LLM's runner uses verbatim get their prompt from the app (the family file's
runner_prompt), the others the bare question (their runner adds its own template: never a second one); the
encoder-decoder families (runner_llm.encoder_decoder) are answered greedily with a note saying what was not applied,
and offer no adapters."""

from __future__ import annotations

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.messages import MSG_RUNNER_ENCDEC_LORA, MSG_RUNNER_PENALTIES
from app.deployments.runner.deployment import RunnerDeployment
from setup.catalog.family_data import family_files
from tests.unit.app.deployments.runner.conftest import ServedClient, sent_values, served_info

RUNNER_FAMILIES = sorted(k for k, raw in family_files().items()
                         if ((raw.get("build") or {}).get("triton") or {}).get("topology") == "runner")
# multimodal_runner_facts.md §0 "templates": the runner uses input_text verbatim for these (of the runner families)
VERBATIM = {"blip2-t5", "cogvlm", "deplot", "fuyu", "kosmos-2", "nougat"}
ENCODER_DECODER = {"blip2-t5", "deplot", "nougat"}  # §0 "encoder-decoder": t5 types, nougat, pix2struct
QUESTION = "What is on the table?"
# what each verbatim family's runner is sent for QUESTION (the family files' templates, written out)
SENT = {"blip2-t5": f"Question: {QUESTION} Answer:", "cogvlm": f" [INST] {QUESTION} [/INST] ",
        "fuyu": f"{QUESTION}\n", "kosmos-2": f"<grounding>{QUESTION}",
        "deplot": "Generate underlying data table of the figure below:", "nougat": ""}


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (8, 8), "red").save(path)
    return path


def served(tmp_path, family: str, **parameters) -> RunnerDeployment:
    return RunnerDeployment(ServedClient(served_info(multimodal_family=family, takes_lora="", **parameters)),
                            AdapterRegistry(tmp_path / "adapters"))


def ask(deployment: RunnerDeployment, text: str, picture, sampling: SamplingParams | None = None,
        adapter: str | None = None) -> None:
    files = [str(picture)] if picture else None
    deployment.open_reply(ReplyRequest(Conversation.asking(text, files), sampling or SamplingParams(), adapter=adapter))


def test_the_family_files_give_a_prompt_to_exactly_the_verbatim_families():
    files = family_files()
    assert {f for f in RUNNER_FAMILIES if files[f].get("runner_prompt")} == VERBATIM
    assert {f for f in RUNNER_FAMILIES if (files[f].get("runner_llm") or {}).get("encoder_decoder")} == ENCODER_DECODER
    assert all(files[f]["runner_prompt"]["source"].strip() for f in VERBATIM)  # each says where it comes from


@pytest.mark.parametrize("family", RUNNER_FAMILIES)
def test_each_family_is_sent_its_prompt_once(tmp_path, picture, opened, family):
    """A verbatim family's text is its file's template around the question (and the figures say the app wrote it);
    a family whose runner adds its template gets the bare question, so no prompt is applied twice."""
    ask(served(tmp_path, family), QUESTION, picture)
    (stream,) = opened
    sent = sent_values(stream.inputs)["text_input"]
    prompt = family_files()[family].get("runner_prompt")
    if prompt:
        assert sent == [prompt["template"].replace("{question}", QUESTION).encode()] == [SENT[family].encode()]
        assert any(n.startswith("prompt written by the app:") for n in stream.notes), stream.notes
    else:
        assert sent == [QUESTION.encode()]
        assert not any(n.startswith("prompt written by the app:") for n in stream.notes)


def test_a_picture_without_words_gets_the_familys_own_prompt(tmp_path, picture, opened):
    ask(served(tmp_path, "kosmos-2"), "", picture)
    ask(served(tmp_path, "fuyu"), "", picture)
    assert [sent_values(s.inputs)["text_input"] for s in opened] == [[b"<grounding>An image of"],
                                                                      [b"Generate a coco-style caption.\n"]]


def test_deplots_header_is_sent_whatever_the_question_and_the_figures_say_it_is_not_read(tmp_path, picture, opened):
    ask(served(tmp_path, "deplot"), "Which bar is tallest?", picture)
    (stream,) = opened
    assert sent_values(stream.inputs)["text_input"] == [b"Generate underlying data table of the figure below:"]
    assert any("the question is not read" in n for n in stream.notes)


@pytest.mark.parametrize("family", sorted(ENCODER_DECODER))
def test_an_encoder_decoder_family_asked_to_sample_is_answered_with_a_note_saying_it_was_not(tmp_path, picture,
                                                                                              opened, family):
    sampling = SamplingParams(temperature=0.9, top_k=40, top_p=0.95, presence_penalty=0.0, frequency_penalty=0.0)
    ask(served(tmp_path, family), QUESTION, picture, sampling)
    (stream,) = opened
    (note,) = [n for n in stream.notes if "encoder-decoder" in n]
    assert note.startswith("sampling (temperature 0.9, top-k 40, top-p 0.95) not applied")
    assert "the reply is greedy" in note


def test_an_encoder_decoder_family_gets_no_penalty_stand_in_and_is_told_the_penalties_are_not_applied(
        tmp_path, picture, opened):
    """The penalty stand-in (REPETITION_FOR_PENALTIES) would not reach EncDecModelRunner either: not sent, and the
    figures say the penalties asked for were not applied."""
    ask(served(tmp_path, "blip2-t5"), QUESTION, picture, SamplingParams(presence_penalty=0.5, frequency_penalty=0.0))
    (stream,) = opened
    assert sent_values(stream.inputs)["repetition_penalty"] == [1.0]
    assert MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES) not in stream.notes
    assert any(n.startswith("presence penalty 0.5 not applied") for n in stream.notes)
    ask(served(tmp_path, "blip2-t5"), QUESTION, picture, SamplingParams(presence_penalty=0.0, frequency_penalty=0.0))
    assert not any("encoder-decoder" in n for n in opened[1].notes)  # greedy and no penalty: nothing lost


@pytest.mark.parametrize("family", sorted(ENCODER_DECODER))
def test_an_encoder_decoder_family_offers_no_adapters_and_refuses_one_in_a_sentence(tmp_path, picture, opened,
                                                                                     family):
    deployment = served(tmp_path, family, lora_adapters="poet")  # even where a repository names some
    assert deployment.adapter_names() == [] and deployment.adapters() == []
    with pytest.raises(InvalidRequest) as caught:
        ask(deployment, QUESTION, picture, adapter="poet")
    display = family_files()[family]["display_name"]
    assert str(caught.value) == MSG_RUNNER_ENCDEC_LORA.format(family=display, adapter="poet")
    assert opened == []
