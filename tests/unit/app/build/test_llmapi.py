"""The Build page's llmapi section without Gradio: releases say what they serve; form -> plan or sentences."""

from __future__ import annotations

from app.build import llmapi as logic


def test_release_picker_says_what_each_release_serves():
    choices = dict(logic.release_choices())
    assert list(choices.values())[0] == "1.3"  # newest first
    assert "LoRA by path" in logic.release_markdown("1.3") and "image_url" in next(iter(choices))
    assert "not: Stop by request id, LoRA by path" in logic.release_markdown("0.19")
    assert "text, Stop by request id, KV-cache and timing outputs; not: LoRA by path" in logic.release_markdown("1.2")
    labels = {key: label for label, key in logic.release_choices()}
    assert "stop by request id, KV-cache and timing outputs" in labels["1.2"]


def test_form_becomes_a_plan_or_its_problems(tmp_path):
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    view = logic.llmapi_view({"family": "llama", "trtllm_version": "1.3", "checkpoint": str(checkpoint),
                              "out": str(tmp_path / "out"), "tp": 1.0, "pp": 1, "max_batch_size": 8.0,
                              "instances": 1, "grpc_port": 8001, "trtllm_root": "", "lora_dir": None})
    assert view.plan is not None and view.plan.repo.max_batch_size == 8
    assert "python -m setup launch" in view.text and "Triton's llmapi model" in view.summary
    bad = logic.llmapi_view({"family": "llava-1.5", "trtllm_version": "0.19", "checkpoint": "", "out": ""})
    assert bad.plan is None and "Fix these first" in bad.summary
    assert any("checkpoint" in p for p in bad.problems) and any("LLaVA-1.5" in p for p in bad.problems)
