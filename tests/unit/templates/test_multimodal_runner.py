"""The runner model (model_repo_templates/multimodal_runner) against TensorRT-LLM's MultimodalModelRunner per era.

TensorRT-LLM cannot be installed here (no GPU, no wheel for this machine), so the runner classes below are mocks:
the one place mocks are allowed. Their constructors and method signatures are written from
/work/shared/reference/multimodal_runner_facts.md (§1 fields, §2 methods; sources E/L early, C/S/U1 middle,
B/Q/V/R late, W for 0.10dev), not from runner_eras.yaml, so the test checks the model's data against the facts:
the model must pick each era by introspection, build an `args` with every field that era's constructor reads,
and call run()/load_test_data() exactly as that era's signature requires.
"""

from __future__ import annotations

import io
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.unit.templates.conftest import ask_all
from tests.unit.templates.conftest import start_model as _start

# Fields each era's constructor reads (facts §1); a missing one is an AttributeError in the real runner.
COMMON = ("visual_engine_name", "hf_model_dir", "batch_size", "num_beams", "top_k", "top_p", "temperature",
          "repetition_penalty", "image_path", "video_path", "path_sep", "debug_mode")
EARLY = COMMON + ("visual_engine_dir", "llm_engine_dir", "use_py_session", "enable_context_fmha_fp32_acc")
MIDDLE = EARLY + ("enable_chunked_context", "kv_cache_free_gpu_memory_fraction", "cross_kv_cache_fraction",
                  "multi_block_mode", "video_num_frames")
LATE = COMMON + ("engine_dir", "session", "enable_context_fmha_fp32_acc", "enable_chunked_context",
                 "kv_cache_free_gpu_memory_fraction", "cross_kv_cache_fraction", "multi_block_mode",
                 "mm_embedding_offloading", "lora_task_uids", "video_num_frames", "audio_path", "prompt_sep")


class _Base:
    FIELDS: tuple[str, ...] = ()
    calls: list = []

    def __init__(self, args):
        missing = [f for f in self.FIELDS if not hasattr(args, f)]
        assert not missing, f"args lacks {missing}"
        self.args, self.model_type, type(self).calls = args, "kosmos-2", []
        self.tokenizer = types.SimpleNamespace(encode=lambda text, add_special_tokens=False: text.split())

    def _reply(self, text, image, tokens):
        seen = None if image is None else getattr(image, "size", image)
        snapshot = {name: getattr(self.args, name) for name in ("top_k", "temperature", "lora_task_uids")
                    if hasattr(self.args, name)}
        type(self).calls.append(("run", text, seen, tokens, snapshot))
        return text, [[f"answer to {text} about {seen}"]] * self.args.batch_size


class EarlyRunner(_Base):  # [E]
    FIELDS = EARLY

    def load_test_image(self): ...
    def video_preprocess(self, video_path):
        type(self).calls.append(("video", Path(video_path).read_bytes()))
        return "frames"

    def setup_inputs(self, input_text, raw_image): ...
    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup=False): ...
    def run(self, input_text, input_image, max_new_tokens):
        return self._reply(input_text, input_image, max_new_tokens)


class MiddleRunner(_Base):  # [S]
    FIELDS = MIDDLE

    def load_test_data(self, image_path, video_path):
        type(self).calls.append(("video", image_path, Path(video_path).read_bytes()))
        return "frames"

    def setup_inputs(self, input_text, raw_image): ...
    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup=False,
                 other_vision_inputs={}, other_decoder_inputs={}): ...  # noqa: B006
    def run(self, input_text, input_image, max_new_tokens):
        return self._reply(input_text, input_image, max_new_tokens)


class LateRunner(_Base):  # [V]
    FIELDS = LATE

    def __init__(self, args):
        super().__init__(args)
        engine = Path(args.engine_dir)
        assert (engine / "vision" / "config.json").is_file() and (engine / "llm" / "config.json").is_file()

    def load_test_data(self, image_path=None, video_path=None):
        type(self).calls.append(("video", image_path, Path(video_path).read_bytes()))
        return "frames"

    def load_test_audio(self, audio_path): ...
    def setup_inputs(self, input_text, raw_image, raw_audio=None): ...
    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens,
                 other_vision_inputs={}, other_audio_inputs={}, other_decoder_inputs={}): ...  # noqa: B006
    def run(self, input_text, input_image, input_audio, max_new_tokens):
        assert input_audio is None
        return self._reply(input_text, input_image, max_new_tokens)


class Runner010(_Base):  # [W]: in run.py, no run()
    def load_test_image(self): ...
    def setup_inputs(self, input_text, raw_image): ...
    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, warmup): ...


class UnknownRunner(_Base):
    def generate(self, prompt, image): ...


RUNNERS = {"early": EarlyRunner, "middle": MiddleRunner, "late": LateRunner}


def _ask(model, **inputs):
    [(response, flags)] = ask_all(model, **inputs)
    assert flags == 1
    return response


def _png(size=(32, 24)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("era", sorted(RUNNERS))
def test_each_era_is_picked_built_and_called_as_recorded(folders, era):
    runner = RUNNERS[era]
    model = _start(folders, runner)
    assert model.era.name == era
    args = model.runner.args
    if era == "late":
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
    assert response.tensors["runner_era"].decode() == era
    assert response.tensors["finish_reason"].decode() == "stop"
    [(_, text, seen, tokens, snapshot)] = runner.calls
    assert (text, seen, tokens) == ("What is this?", (32, 24), 20)
    assert snapshot["top_k"] == 5 and snapshot["temperature"] == 0.5


@pytest.mark.parametrize("era", sorted(RUNNERS))
def test_a_video_goes_through_the_eras_own_loader(folders, era):
    runner = RUNNERS[era]
    model = _start(folders, runner, takes_video="true")
    response = _ask(model, text_input="What happens?", video_bytes=b"VIDEO")
    assert response.error is None
    loaded = runner.calls[0]
    assert loaded[-1] == b"VIDEO" and (era == "early" or loaded[1] is None)
    assert runner.calls[1][2] == "frames"


def test_lora_goes_to_the_late_runner_only(folders):
    late = _start(folders, LateRunner)
    assert _ask(late, text_input="Hi", lora_task_id=np.uint64(3)).error is None  # _ask ends the model
    assert LateRunner.calls[0][4]["lora_task_uids"] == ["3"]
    early = _start(folders, EarlyRunner)
    error = _ask(early, text_input="Hi", lora_task_id=np.uint64(3)).error
    assert "takes no LoRA task" in error


def test_stop_words_cut_the_whole_reply(folders):
    model = _start(folders, MiddleRunner)
    response = _ask(model, text_input="Hi", stop_words=["about"])
    assert response.tensors["text_output"].decode() == "answer to Hi " and response.tensors["finish_reason"] == b"stop"


def test_the_010_runner_and_unknown_signatures_are_refused_by_name(folders):
    with pytest.raises(ValueError, match="0.10dev runner: .*has no run"):
        _start(folders, Runner010)
    with pytest.raises(ValueError, match=r"matches no recorded era .*generate\(prompt, image\), run \(missing\)"):
        _start(folders, UnknownRunner)


def test_settings_reach_args_only_where_the_era_reads_them(folders):
    model = _start(folders, LateRunner, runner_settings="session=python;multi_block_mode=false")
    assert model.runner.args.session == "python" and model.runner.args.multi_block_mode is False
    links = Path(model.links)
    model.finalize()
    assert not links.exists()  # the late runner's engine_dir links go with the model
    with pytest.raises(ValueError, match="'session' is not a field the early runner reads"):
        _start(folders, EarlyRunner, runner_settings="session=python;multi_block_mode=false")


def test_bad_requests_get_a_sentence(folders):
    model = _start(folders, MiddleRunner)
    assert "max_tokens must be between 1 and 1024" in _ask(model, text_input="Hi", max_tokens=np.int32(0)).error
    model = _start(folders, MiddleRunner)
    assert "is not an image PIL can read" in _ask(model, text_input="Hi", image_bytes=[b"nope"]).error
    model = _start(folders, MiddleRunner)
    assert "reads images, not videos" in _ask(model, text_input="Hi", video_bytes=b"V").error


def test_a_late_only_family_refuses_another_eras_runner_at_start(folders):
    """qwen2_vl, mllama and llava_onevision are recorded only in the late runner ([V]; [E] lacks them)."""
    with pytest.raises(ValueError, match="is the middle runner, but qwen2-vl is served only by the late runner"):
        _start(folders, MiddleRunner, runner_eras="late", multimodal_family="qwen2-vl")
    model = _start(folders, LateRunner, runner_eras="late", multimodal_family="qwen2-vl")
    assert model.era.name == "late"
    model.finalize()


def test_a_required_field_is_set_and_a_contradicting_setting_refused(folders):
    """[V] forces session to cpp_llm_only for qwen2_vl: the model sets it and refuses runner_settings' other one."""
    model = _start(folders, LateRunner, runner_required="session=cpp_llm_only", runner_settings="multi_block_mode=false")
    assert model.runner.args.session == "cpp_llm_only" and model.runner.args.multi_block_mode is False
    model.finalize()
    with pytest.raises(ValueError, match=r"requires session=cpp_llm_only \(runner_required\), but runner_settings "
                                         r"sets session=python"):
        _start(folders, LateRunner, runner_required="session=cpp_llm_only", runner_settings="session=python")


def test_takes_lora_false_refuses_a_lora_task_the_runner_would_drop(folders):
    """[V, B]: the mllama path passes no lora_uids, so a task would be dropped silently; the model refuses it."""
    model = _start(folders, LateRunner, takes_lora="false", multimodal_family="mllama")
    error = _ask(model, text_input="Hi", lora_task_id=np.uint64(3)).error
    assert "takes no LoRA task (takes_lora is false: mllama's path" in error and LateRunner.calls == []
    model = _start(folders, LateRunner, takes_lora="false", multimodal_family="mllama")
    assert _ask(model, text_input="Hi").error is None and LateRunner.calls[0][4]["lora_task_uids"] is None


def test_qwen2_vl_gets_one_text_and_one_picture_per_batch_slot(folders):
    """[V]: setup_inputs reads input_text[idx] and raw_image[idx] for qwen2_vl (a bare string would be read a
    character per slot), so run() gets lists of batch_size; other types get the bare values."""
    class Qwen(LateRunner):
        def __init__(self, args):
            super().__init__(args)
            self.model_type = "qwen2_vl"

    model = _start(folders, Qwen, runner_settings="batch_size=2")
    assert _ask(model, text_input="What is it?", image_bytes=[_png()]).error is None
    [(_, text, seen, _, _)] = Qwen.calls
    assert text == ["What is it?"] * 2 and [getattr(i, "size", None) for i in seen] == [(32, 24)] * 2
