"""The runner model (model_repo_templates/multimodal_runner) against TensorRT-LLM's MultimodalModelRunner per release:
how it is picked, built and called. The runners are the behavioural stand-ins of release_runners.py (written from the
sources at release commits: 0.12, 0.13, 0.16, 1.x), not from runner_eras.yaml, so these tests check the model's data
against the releases; test_runner_releases.py holds the done-when tests of issue #47.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.unit.templates.conftest import ask_all
from tests.unit.templates.conftest import start_model as _start
from tests.unit.templates.release_runners import RELEASES, Release013, Release016, Release1X, with_type

LATE = Release1X.FIELDS  # the fields the 1.x constructor reads (test_runner_streaming's runner checks them)


class Runner010:  # [W] WhiteD2125/TensorRT-LLM@6ad7cf1 (0.10.0.dev): in examples/multimodal/run.py, no run()
    def __init__(self, args): ...
    def load_test_image(self): ...
    def setup_inputs(self, input_text, raw_image): ...
    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup): ...


class UnknownRunner:
    def __init__(self, args): ...
    def generate(self, prompt, image): ...


def _ask(model, **inputs):
    [(response, flags)] = ask_all(model, **inputs)
    assert flags == 1
    return response


def _png(size=(32, 24)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_each_release_is_picked_built_and_called_as_recorded(folders, release):
    runner = with_type(RELEASES[release], "kosmos-2")
    model = _start(folders, runner)
    assert model.era.name == release
    args = model.runner.args
    if release == "1.x":
        assert Path(args.engine_dir, "vision").resolve() == (folders / "visual").resolve()
        assert Path(args.engine_dir, "llm").resolve() == (folders / "llm").resolve()
        assert not hasattr(args, "visual_engine_dir")
    else:
        assert (args.visual_engine_dir, args.llm_engine_dir) == (str(folders / "visual"), str(folders / "llm"))
    assert args.hf_model_dir == str(folders / "hf") and args.batch_size == 1 and args.debug_mode is False
    response = _ask(model, text_input="What is this?", image_bytes=[_png()], max_tokens=np.int32(20),
                    top_k=np.int32(5), temperature=np.float32(0.5))
    assert response.error is None
    assert response.tensors["text_output"].decode() == "answer to What is this? about (32, 24)"
    assert response.tensors["reply_mode"].decode() == "whole reply"
    assert response.tensors["runner_era"].decode() == release
    assert response.tensors["finish_reason"].decode() == "stop"
    [(_, seen, tokens, sampling, _)] = runner.last.calls
    assert (seen["text"], seen["picture"].size, tokens) == ("What is this?", (32, 24), 20)
    assert sampling["top_k"] == 5 and sampling["temperature"] == 0.5


def test_lora_goes_to_the_1x_runner_only(folders):
    late = with_type(Release1X, "llava", LORA_UIDS=("3",))
    assert _ask(_start(folders, late), text_input="Hi", image_bytes=[_png()],
                lora_task_id=np.uint64(3)).error is None  # _ask ends the model
    assert late.last.calls[0][4] == ["3"]
    for release in ("0.12", "0.13", "0.16"):
        error = _ask(_start(folders, with_type(RELEASES[release], "llava")), text_input="Hi",
                     lora_task_id=np.uint64(3)).error
        assert f"This runner ({release} era) takes no LoRA task" in error


def test_stop_words_cut_the_whole_reply(folders):
    model = _start(folders, with_type(Release016, "llava"))
    response = _ask(model, text_input="Hi", image_bytes=[_png()], stop_words=["about"])
    assert response.tensors["text_output"].decode() == "answer to Hi " and response.tensors["finish_reason"] == b"stop"


def test_the_010_runner_and_unknown_signatures_are_refused_by_name(folders):
    with pytest.raises(ValueError, match="0.10dev runner: .*has no run"):
        _start(folders, Runner010)
    with pytest.raises(ValueError, match=r"matches no recorded release .*generate\(prompt, image\), run \(missing\)"):
        _start(folders, UnknownRunner)


def test_settings_reach_args_only_where_the_release_reads_them(folders):
    model = _start(folders, Release1X, runner_settings="session=python;multi_block_mode=false")
    assert model.runner.args.session == "python" and model.runner.args.multi_block_mode is False
    links = Path(model.links)
    model.finalize()
    assert not links.exists()  # the 1.x runner's engine_dir links go with the model
    with pytest.raises(ValueError, match="'session' is not a field the 0.13 runner reads"):
        _start(folders, Release013, runner_settings="session=python;multi_block_mode=false")


def test_bad_requests_get_a_sentence(folders):
    model = _start(folders, Release016)
    assert "max_tokens must be between 1 and 1024" in _ask(model, text_input="Hi", max_tokens=np.int32(0)).error
    model = _start(folders, Release016)
    assert "is not an image PIL can read" in _ask(model, text_input="Hi", image_bytes=[b"nope"]).error
    model = _start(folders, Release016)
    assert "reads images, not videos" in _ask(model, text_input="Hi", video_bytes=b"V").error


def test_a_016_and_1x_family_refuses_an_earlier_runner_at_start(folders):
    """qwen2_vl, mllama and llava_onevision: setup_inputs has their branches from 0.16 on (R016:1693, 1888, 1917)."""
    with pytest.raises(ValueError, match=r"is the 0.13 runner, but qwen2-vl is served only by the 0.16 or 1.x runner"):
        _start(folders, Release013, runner_eras="0.16,1.x", multimodal_family="qwen2-vl")
    model = _start(folders, Release016, runner_eras="0.16,1.x", multimodal_family="qwen2-vl")
    assert model.era.name == "0.16"
    model.finalize()


def test_a_required_field_is_set_where_the_release_reads_it_and_a_contradicting_setting_refused(folders):
    """R1X forces session to cpp_llm_only for qwen2_vl: the model sets it and refuses runner_settings' other one;
    0.16 has no session field (it turns use_py_session off itself for qwen2_vl, R016:366-371)."""
    model = _start(folders, Release1X, runner_required="session=cpp_llm_only", runner_settings="multi_block_mode=false")
    assert model.runner.args.session == "cpp_llm_only" and model.runner.args.multi_block_mode is False
    model.finalize()
    with pytest.raises(ValueError, match=r"requires session=cpp_llm_only \(runner_required\), but runner_settings "
                                         r"sets session=python"):
        _start(folders, Release1X, runner_required="session=cpp_llm_only", runner_settings="session=python")
    model = _start(folders, Release016, runner_required="session=cpp_llm_only")
    assert not hasattr(model.runner.args, "session")
    model.finalize()


def test_takes_lora_false_refuses_a_lora_task_the_runner_would_drop(folders):
    """R1X generate: the mllama call passes no lora_uids, so a task would be dropped silently; the model refuses it."""
    runner = with_type(Release1X, "mllama")
    model = _start(folders, runner, takes_lora="false", multimodal_family="mllama")
    error = _ask(model, text_input="Hi", lora_task_id=np.uint64(3)).error
    assert "takes no LoRA task (takes_lora is false: mllama's path" in error and runner.last.calls == []
    model = _start(folders, runner, takes_lora="false", multimodal_family="mllama")
    assert _ask(model, text_input="Hi").error is None and runner.last.args.lora_task_uids is None


def test_qwen2_vl_gets_one_text_and_one_picture_per_batch_slot_on_1x_only(folders):
    """R1X setup_inputs reads input_text[idx] and raw_image[idx] for qwen2_vl (a bare string would be read a
    character per slot), so run() gets lists of batch_size; R016 builds one message from the bare values."""
    late = with_type(Release1X, "qwen2_vl")
    model = _start(folders, late, runner_settings="batch_size=2")
    assert _ask(model, text_input="What is it?", image_bytes=[_png()]).error is None
    [(_, seen, _, _, _)] = late.last.calls
    assert seen["text"] == ["What is it?"] * 2 and [i.size for i in seen["picture"]] == [(504, 504)] * 2
    release016 = with_type(Release016, "qwen2_vl")
    model = _start(folders, release016, runner_settings="batch_size=2")
    assert _ask(model, text_input="What is it?", image_bytes=[_png()]).error is None
    [(_, seen, _, _, _)] = release016.last.calls
    assert seen["text"] == "What is it?" and seen["picture"].size == (504, 504)
