"""The runner kind's requests, built from a ReplyRequest against the served config: the bare question of the
person's last turn, the pictures as file bytes (a video where the model takes one), the sampling the runner reads,
max tokens and stop strings; adapters passed as a task id only where the deployment says its runner takes them,
otherwise refused in a sentence before anything is sent."""

from __future__ import annotations

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.core.constants import WHOLE_REPLY_STALL_SECONDS
from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidRequest, TextOnlyDeployment
from app.core.messages import MSG_TEXT_ONLY
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.messages import (
    MSG_RUNNER_IMAGES,
    MSG_RUNNER_LORA_NOT_BAKED,
    MSG_RUNNER_NO_LORA,
    MSG_RUNNER_PENALTIES,
)
from app.deployments.runner.deployment import RunnerDeployment, last_user_text
from tests.lora_helpers import TINY, write_engine_config, write_model_config, write_peft
from tests.unit.app.deployments.runner.conftest import ServedClient, sent_values, served_info


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (8, 8), "red").save(path)
    return path


def deployment(tmp_path, **parameters) -> RunnerDeployment:
    drop = parameters.pop("drop_inputs", ())
    registry_dir = tmp_path / "adapters"
    if not registry_dir.exists():
        write_peft(registry_dir / "pirate", shape=TINY, seed=2)
    return RunnerDeployment(ServedClient(served_info(drop, **parameters)), AdapterRegistry(registry_dir))


def test_the_request_carries_the_bare_question_the_picture_bytes_and_the_settings(tmp_path, picture, opened):
    sampling = SamplingParams(max_tokens=40, temperature=0.3, top_k=5, top_p=0.8, repetition_penalty=1.1,
                              presence_penalty=0.5, frequency_penalty=0.5)
    request = ReplyRequest(Conversation.asking("What colour is its fur?", [str(picture)]), sampling,
                           stop=("\nUser:",))
    deployment(tmp_path).open_reply(request)
    (stream,) = opened
    sent = sent_values(stream.inputs)
    assert sent["text_input"] == [b"What colour is its fur?"]  # no template: NeVA's runner adds its own
    assert sent["image_bytes"] == [picture.read_bytes()]
    assert sent["max_tokens"] == [40] and sent["top_k"] == [5]
    assert sent["temperature"] == [pytest.approx(0.3)] and sent["top_p"] == [pytest.approx(0.8)]
    assert sent["repetition_penalty"] == [pytest.approx(1.1)]
    assert sent["stop_words"] == [b"\nUser:"]
    # the runner reads no presence/frequency penalty and no seed (the model declares none): nothing else is sent
    assert set(sent) == {"text_input", "image_bytes", "max_tokens", "temperature", "top_k", "top_p",
                         "repetition_penalty", "stop_words"}
    assert stream.stall_timeout >= WHOLE_REPLY_STALL_SECONDS  # the whole reply comes after one long silence


def test_a_mild_repetition_penalty_stands_in_for_the_penalties_the_runner_cannot_read(tmp_path, opened):
    """The chat's presence/frequency penalties keep greedy replies out of loops; the runner reads neither, so
    with the repetition penalty left at 1 the runner kind sends REPETITION_FOR_PENALTIES and notes it."""
    served = deployment(tmp_path)
    served.open_reply(ReplyRequest(Conversation.asking("What colour is its fur?")))  # the chat's defaults
    assert sent_values(opened[0].inputs)["repetition_penalty"] == [pytest.approx(REPETITION_FOR_PENALTIES)]
    assert opened[0].notes == (MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES),)
    served.open_reply(ReplyRequest(Conversation.asking("Hi"), SamplingParams(presence_penalty=0, frequency_penalty=0)))
    assert sent_values(opened[1].inputs)["repetition_penalty"] == [1.0] and opened[1].notes == ()
    served.open_reply(ReplyRequest(Conversation.asking("Hi"), SamplingParams(repetition_penalty=1.3)))
    assert sent_values(opened[2].inputs)["repetition_penalty"] == [pytest.approx(1.3)] and opened[2].notes == ()
    without = deployment(tmp_path, drop_inputs=("repetition_penalty",))
    without.open_reply(ReplyRequest(Conversation.asking("Hi")))
    assert opened[3].notes == ()  # nothing sent in their place: nothing to say


def test_only_the_inputs_the_served_config_declares_are_sent(tmp_path, picture, opened):
    served = deployment(tmp_path, drop_inputs=("top_p", "repetition_penalty", "stop_words"))
    served.open_reply(ReplyRequest(Conversation.asking("What is this?", [str(picture)]), stop=("x",)))
    assert set(sent_values(opened[0].inputs)) == {"text_input", "image_bytes", "max_tokens", "temperature", "top_k"}


def test_the_last_user_turn_alone_is_the_question_and_only_its_pictures_go(tmp_path, picture, opened):
    earlier = tmp_path / "blue.png"
    Image.new("RGB", (8, 8), "blue").save(earlier)
    history = Conversation((Turn.user("What is this?", (Media.of(str(earlier)),)),
                            Turn.reply(ReplyVersion("A blue square.")), Turn.user("And this one?", (Media.of(str(picture)),))))
    assert last_user_text(history) == "And this one?"
    deployment(tmp_path).open_reply(ReplyRequest(history))
    sent = sent_values(opened[0].inputs)
    assert sent["text_input"] == [b"And this one?"] and sent["image_bytes"] == [picture.read_bytes()]


def test_a_text_turn_sends_no_picture_input(tmp_path, opened):
    deployment(tmp_path).open_reply(ReplyRequest(Conversation.asking("Hello")))
    assert "image_bytes" not in sent_values(opened[0].inputs)


def test_image_bytes_are_sent_as_given(tmp_path, opened):
    deployment(tmp_path).open_reply(ReplyRequest(Conversation.asking("What is this?", [b"\x89PNG raw"])))
    assert sent_values(opened[0].inputs)["image_bytes"] == [b"\x89PNG raw"]


def test_a_video_goes_as_video_bytes_where_the_model_takes_video(tmp_path, opened):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"not decoded here")
    deployment(tmp_path, takes_video="true", multimodal_family="video-neva").open_reply(
        ReplyRequest(Conversation.asking("What happens?", [str(clip)])))
    sent = sent_values(opened[0].inputs)
    assert sent["video_bytes"] == [b"not decoded here"] and "image_bytes" not in sent


def test_a_video_an_api_caller_sent_as_bytes_goes_as_video_bytes(tmp_path, opened):
    from app.core.conversation import VIDEO

    gif = b"GIF89a sent inline"  # a video_url part: bytes with no file name to tell it by
    video = Media(name="video 1", data=gif, kind=VIDEO, frames=(b"frame",), as_video=True)
    deployment(tmp_path, takes_video="true", multimodal_family="video-neva").open_reply(
        ReplyRequest(Conversation((Turn.user("What happens?", (video,)),))))
    sent = sent_values(opened[0].inputs)
    assert sent["video_bytes"] == [gif] and "image_bytes" not in sent


def test_a_video_for_a_model_without_video_goes_as_image_bytes_for_the_runner_to_refuse(tmp_path, opened):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"frames")
    deployment(tmp_path).open_reply(ReplyRequest(Conversation.asking("What happens?", [str(clip)])))
    assert sent_values(opened[0].inputs)["image_bytes"] == [b"frames"]


def test_more_pictures_than_the_runner_takes_are_refused_before_sending(tmp_path, picture, opened):
    with pytest.raises(InvalidRequest) as caught:
        deployment(tmp_path).open_reply(ReplyRequest(Conversation.asking("Compare", [str(picture), str(picture)])))
    assert str(caught.value) == MSG_RUNNER_IMAGES.format(family="neva", limit=1, count=2)
    assert opened == []


def test_a_picture_for_a_model_without_image_input_is_refused(tmp_path, picture, opened):
    served = deployment(tmp_path, drop_inputs=("image_bytes",))
    with pytest.raises(TextOnlyDeployment, match=MSG_TEXT_ONLY):
        served.open_reply(ReplyRequest(Conversation.asking("What is this?", [str(picture)])))
    with pytest.raises(TextOnlyDeployment):
        served.check_images([str(picture)], "What is this?")
    assert opened == []


def test_an_adapter_is_refused_when_the_runner_takes_none(tmp_path, opened):
    served = deployment(tmp_path, lora_adapters="pirate")
    assert served.takes_lora() is False and served.adapter_names() == [] and served.adapters() == []
    with pytest.raises(InvalidRequest) as caught:
        served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="pirate"))
    assert str(caught.value) == MSG_RUNNER_NO_LORA.format(model="multimodal_runner")
    assert opened == []


def test_an_adapter_is_refused_when_the_model_declares_no_lora_task_id(tmp_path, opened):
    served = deployment(tmp_path, takes_lora="true", lora_adapters="pirate", drop_inputs=("lora_task_id",))
    assert served.takes_lora() is False and served.adapter_names() == []
    with pytest.raises(InvalidRequest):
        served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="pirate"))


def test_the_adapters_offered_are_exactly_the_ones_built_into_the_engine_by_their_place(tmp_path, opened):
    """The 1.x runner's lora_uids are the adapters the LLM engine was built with, "0", "1", ... in load order; the
    repository records their names (lora_adapters), and the app's own adapters folder ('pirate') is not offered."""
    served = deployment(tmp_path, takes_lora="", lora_adapters="poet,sailor")
    assert served.adapter_names() == ["poet", "sailor"]
    assert [(a.name, a.task_id, a.held_by_server) for a in served.adapters()] == [("poet", 0, True), ("sailor", 1, True)]
    served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="poet"))
    served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="sailor"))
    assert [sent_values(s.inputs)["lora_task_id"] for s in opened] == [[0], [1]]
    served.open_reply(ReplyRequest(Conversation.asking("Hello")))
    assert "lora_task_id" not in sent_values(opened[2].inputs)  # the base model: no task


def test_an_adapter_not_built_into_the_engine_is_refused_in_a_sentence_that_names_it(tmp_path, opened):
    served = deployment(tmp_path, takes_lora="", lora_adapters="poet,sailor")
    with pytest.raises(InvalidRequest) as caught:
        served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="pirate"))
    assert str(caught.value) == MSG_RUNNER_LORA_NOT_BAKED.format(adapter="pirate", model="multimodal_runner",
                                                                 baked="'poet', 'sailor'")
    bare = deployment(tmp_path, takes_lora="")  # an engine built without adapters: none offered, the sentence says none
    assert bare.adapter_names() == []
    with pytest.raises(InvalidRequest, match="'pirate' is not built into model 'multimodal_runner'.*here none"):
        bare.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="pirate"))
    assert opened == []


def test_registering_an_adapter_is_refused(tmp_path):
    with pytest.raises(InvalidRequest) as caught:
        deployment(tmp_path).register_adapter("pirate", tmp_path / "adapters" / "pirate")
    assert str(caught.value) == MSG_RUNNER_NO_LORA.format(model="multimodal_runner")


def test_a_model_that_is_not_decoupled_is_refused_in_a_sentence(tmp_path, opened):
    with pytest.raises(InvalidRequest, match="not decoupled; redeploy it with decoupled_mode true"):
        deployment(tmp_path, decoupled_mode="false").open_reply(ReplyRequest(Conversation.asking("Hello")))
    assert opened == []


def test_continuing_a_reply_is_refused_the_runner_keeps_no_conversation(tmp_path, opened):
    with pytest.raises(InvalidRequest, match="cannot continue a reply"):
        deployment(tmp_path).open_reply(ReplyRequest(Conversation.asking("Hello"), continues="The cat"))
    assert opened == []


def test_the_served_parameters_say_the_family_and_limits(tmp_path):
    served = deployment(tmp_path, multimodal_family="fuyu", max_num_images="2", takes_video="true")
    assert served.family == "fuyu" and served.max_images() == 2 and served.takes_video() is True
    unfilled = RunnerDeployment(ServedClient(served_info(multimodal_family="${multimodal_family}")),
                                AdapterRegistry(tmp_path / "none"))
    assert unfilled.family == ""  # a placeholder left in the config is no value
    assert served.model_folder() is None  # hf_model_dir empty
    assert deployment(tmp_path, hf_model_dir=str(tmp_path)).model_folder() == str(tmp_path)


def test_for_model_talks_to_another_model_on_the_same_server(tmp_path):
    served = deployment(tmp_path)
    other = served.for_model("runner-fuyu")
    assert isinstance(other, RunnerDeployment) and other.client.model == "runner-fuyu"
    assert other.client.url == served.client.url and other.registry is served.registry


def engine_with_adapters(tmp_path, **adapters: dict):
    """An LLM engine folder (SmolLM2's shapes, every module, max_lora_rank 64) holding trtllm-build's copies of the
    built-in adapters (lora/0, lora/1, ... in the order given: name -> write_peft's arguments)."""
    engine = write_engine_config(tmp_path / "smollm2-135m-instruct")
    for place, arguments in enumerate(adapters.values()):
        write_peft(engine / "lora" / str(place), **arguments)
    return engine


LLAMA = {"hidden": 2048, "inter": 8192, "heads": 32, "kv": 8, "head": 64, "layers": 16}


def test_the_built_in_adapters_are_audited_against_the_llm_engine_and_one_for_another_model_is_refused(tmp_path,
                                                                                                        opened):
    engine = engine_with_adapters(tmp_path, poet={"rank": 8}, sailor={
        "rank": 8, "shape": LLAMA, "config_extra": {"base_model_name_or_path": "meta-llama/Llama-3.2-1B"}})
    served = deployment(tmp_path, takes_lora="", lora_adapters="poet,sailor", llm_engine_dir=str(engine))
    target = served.lora_target()  # the model's llm_engine_dir, on this machine
    assert target.num_layers == 30 and target.max_rank == 64 and target.model == "smollm2-135m-instruct"
    assert served.adapter_names() == ["poet"]  # the one for another base model is not offered
    [poet] = served.adapters()
    assert poet.path == engine / "lora" / "0" and poet.task_id == 0
    audit = served.adapter_audit("poet")
    assert audit.applied_percent == 100 and audit.shapes_checked and not audit.refused
    problem = served.adapter_problems()["sailor"]
    assert "meta-llama/Llama-3.2-1B" in problem and "smollm2-135m-instruct" in problem
    with pytest.raises(InvalidRequest, match="meta-llama/Llama-3.2-1B.*smollm2-135m-instruct"):
        served.open_reply(ReplyRequest(Conversation.asking("Hello"), adapter="sailor"))
    assert opened == []  # refused before anything was sent


def test_an_adapter_for_another_base_model_is_refused_when_added(tmp_path):
    """The Adapters tab adds with the deployment's lora_target(): the app's --engine-dir here."""
    from app.adapters.intake import AdapterError

    engine = engine_with_adapters(tmp_path)
    served = RunnerDeployment(ServedClient(served_info(takes_lora="")), AdapterRegistry(tmp_path / "folder"),
                              engine_dir=str(engine))
    llama = write_peft(tmp_path / "llama-style", rank=8, shape=LLAMA,
                       config_extra={"base_model_name_or_path": "meta-llama/Llama-3.2-1B"})
    with pytest.raises(AdapterError, match="meta-llama/Llama-3.2-1B.*smollm2-135m-instruct"):
        served.registry.add_folder(llama, target=served.lora_target())
    assert served.registry.names() == []
    fits = write_peft(tmp_path / "fits", rank=8)
    assert served.registry.add_folder(fits, target=served.lora_target()).name == "fits"


def test_without_an_engine_or_model_folder_the_audit_says_shapes_were_not_checked_and_why(tmp_path):
    served = deployment(tmp_path, takes_lora="")  # llm_engine_dir "/l" is not on this machine, no hf_model_dir
    target = served.lora_target()
    assert not target.knows_shapes and "/l" not in target.unchecked
    audit = served.adapter_audit("pirate")  # the adapters folder's, as no engine copy is there
    assert not audit.shapes_checked and not audit.refused
    assert any(flag.startswith("Shapes not checked") and "engine's config.json (none)" in flag for flag in audit.flags)
    folder = write_model_config(tmp_path / "hf")  # --tokenizer-dir: the model folder's shapes
    with_model = RunnerDeployment(ServedClient(served_info(takes_lora="")), served.registry, tokenizer_dir=str(folder))
    assert with_model.lora_target().num_layers == 30
    assert with_model.adapter_audit("pirate").refused  # the folder's pirate was made for a tiny test model
