"""The writer's runner checks (setup/repo/runner_checks.py) for what a family file requires of its path in the
runner: the releases recorded handling it, args fields it must have, no LoRA; and the runner settings' shape."""

from __future__ import annotations

import json

import pytest

from setup.repo.runner_checks import check_family_requirements, check_runner, recorded_eras


@pytest.fixture
def values(tmp_path):
    def make(family, model_type, **extra):
        for name in ("visual", "llm", "hf"):
            (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / "visual" / "config.json").write_text(json.dumps({"builder_config": {"model_type": model_type}}))
        (tmp_path / "llm" / "config.json").write_text("{}")
        return {"visual_engine_dir": str(tmp_path / "visual"), "llm_engine_dir": str(tmp_path / "llm"),
                "hf_model_dir": str(tmp_path / "hf"), "multimodal_family": family, **extra}
    return make


def test_the_recorded_eras_are_the_served_ones():
    assert recorded_eras() == ["0.12", "0.13", "0.16", "1.x"]  # 0.10dev is recorded but not served


def test_each_late_only_family_passes_with_its_requirements(values):
    check_runner(values("qwen2-vl", "qwen2_vl", runner_eras="0.16,1.x", runner_required="session=cpp_llm_only"))
    check_runner(values("mllama", "mllama", runner_eras="0.16,1.x", takes_lora="false"))
    check_runner(values("llava-onevision", "llava_onevision", runner_eras="0.16,1.x", takes_video="true",
                        runner_settings="video_num_frames=8"))
    check_runner(values("cogvlm", "cogvlm", runner_eras="0.13,1.x"))  # a family without requirements: any era


@pytest.mark.parametrize(("family", "model_type", "given", "message"), [
    ("qwen2-vl", "qwen2_vl", {"runner_eras": "0.16,1.x"}, "qwen2-vl needs runner_required=session=cpp_llm_only"),
    ("qwen2-vl", "qwen2_vl", {"runner_eras": "0.16,1.x", "runner_required": "session=cpp_llm_only",
                              "runner_settings": "session=cpp"}, "the family requires session=cpp_llm_only"),
    ("mllama", "mllama", {"runner_eras": "0.16,1.x"}, "mllama needs takes_lora=false"),
    ("mllama", "mllama", {"runner_eras": "0.13", "takes_lora": "false"}, "mllama needs runner_eras=0.16,1.x"),
    ("llava-onevision", "llava_onevision", {"runner_eras": "1.x;x"}, "runner_eras names 1.x;x"),
    ("llava-onevision", "llava_onevision", {"runner_eras": "late"}, "runner_eras names late"),
    ("cogvlm", "cogvlm", {"runner_settings": "session"}, "runner_settings must be name=value pairs"),
    ("cogvlm", "cogvlm", {"runner_required": "=1"}, "runner_required must be name=value pairs"),
])
def test_a_missing_or_contradicted_requirement_is_one_sentence(values, family, model_type, given, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_runner(values(family, model_type, **given))


def test_the_message_names_the_family_file_and_its_source():
    with pytest.raises(ValueError) as raised:
        check_family_requirements("mllama", {"runner_eras": "0.16,1.x", "takes_lora": "true"})
    assert "setup/data/families/mllama.yaml, source [R016]" in str(raised.value) and "takes_lora=true" in str(raised.value)
