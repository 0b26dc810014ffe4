"""Which families get a runner twin (setup/cpu/runner_demo.py) and what their twin repositories carry: every family
whose Triton section says topology: runner, with the family's runner requirements and only the parameters the
runner model declares."""

from __future__ import annotations

from pathlib import Path

from setup.catalog.builds import families
from setup.cpu.runner_demo import STANDIN_CLASS, runner_demo_config, runner_families


def test_every_runner_family_has_a_twin_including_the_late_only_ones():
    assert set(runner_families()) == {f.id for f in families().values() if f.triton.get("topology") == "runner"}
    assert {"qwen2-vl", "mllama", "llava-onevision"} <= set(runner_families())


def test_a_twin_carries_its_familys_requirements_and_no_foreign_parameters():
    config = runner_demo_config("mllama", Path("/engine"), Path("/vision"))
    assert config.template == "multimodal_runner" and config.parameters["runner_class"] == STANDIN_CLASS
    assert config.parameters["runner_eras"] == "0.16,1.x" and config.parameters["takes_lora"] is False
    assert "encoder_input_features_data_type" not in config.parameters
    assert runner_demo_config("qwen2-vl", Path("/e"), Path("/v")).parameters["runner_required"] == \
        "session=cpp_llm_only"
    onevision = runner_demo_config("llava-onevision", Path("/e"), Path("/v")).parameters
    assert onevision["takes_video"] is True and onevision["runner_settings"] == "video_num_frames=8"
