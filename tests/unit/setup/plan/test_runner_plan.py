"""The families only TensorRT-LLM's run.py served: each plan ends with the runner topology's repository step, which
(with stand-in engine folders in place of the built engines) writes and validates a repository of one
multimodal_runner model, built from the visual engine, the LLM engine and the Hugging Face folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from setup.paths import PROJECT_ROOT
from setup.plan.config import PlanConfig
from setup.plan.planner import make_plan
from setup.repo.writer import parse_model_config
from tests.build_standins import make_checkpoint

RUNNER_FAMILIES = ("blip2-t5", "cogvlm", "deplot", "fuyu", "kosmos-2", "llava-next", "neva", "nougat", "phi-3-vision",
                   "video-neva", "qwen2-vl", "mllama", "llava-onevision")
# Families only the 0.16 and 1.x runners handle (runner_eras.yaml): planned from 0.16 on (qwen2-vl's build from 0.19).
LATE_ONLY = {"qwen2-vl": "0.19", "mllama": "0.16", "llava-onevision": "0.16"}
VIDEO = {"video-neva", "llava-onevision"}
# What each family's visual engine records as builder_config.model_type (multimodal_spec.md §6; blip2 is stored as
# blip2-t5, Deplot's builder type is pix2struct).
RECORDED = {"blip2-t5": "blip2-t5", "cogvlm": "cogvlm", "deplot": "pix2struct", "fuyu": "fuyu", "kosmos-2": "kosmos-2",
            "llava-next": "llava_next", "neva": "neva", "nougat": "nougat", "phi-3-vision": "phi-3-vision",
            "video-neva": "video-neva", "qwen2-vl": "qwen2_vl", "mllama": "mllama", "llava-onevision": "llava_onevision"}
ENC_DEC = {"blip2-t5", "deplot", "nougat"}


def _plan(tmp_path: Path, family: str, version: str | None = None):
    version = version or LATE_ONLY.get(family, "0.19")
    if family in ("neva", "video-neva"):
        checkpoint = tmp_path / "model.nemo"
        checkpoint.write_bytes(b"nemo")
        fields = {"tokenizer_dir": str(make_checkpoint(tmp_path / "tokenizer"))}
    else:
        checkpoint, fields = make_checkpoint(tmp_path / "ckpt"), {}
    return make_plan(PlanConfig(family=family, checkpoint=str(checkpoint), out=str(tmp_path / "out"),
                                trtllm_version=version, trtllm_root="/opt/trtllm", **fields))


def _stand_in_engines(out: Path, family: str, model_type: str) -> None:
    (out / "visual_engine").mkdir(parents=True)
    (out / "visual_engine" / "config.json").write_text(json.dumps({"builder_config": {"model_type": model_type}}))
    llm = out / "engines" / ("decoder" if family in ENC_DEC else "llm")
    llm.mkdir(parents=True)
    (llm / "config.json").write_text("{}")


def _run(step) -> subprocess.CompletedProcess:
    return subprocess.run(list(step.argv), cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)


def _sets(step) -> dict[str, str]:
    argv = list(step.argv)
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")


@pytest.mark.parametrize("family", RUNNER_FAMILIES)
def test_the_repository_step_writes_and_validates_the_runner_topology(tmp_path, family):
    plan = _plan(tmp_path, family)
    by_id = {s.id: s for s in plan.steps}
    assert [s.phase for s in plan.steps][0] == "check" and [s.phase for s in plan.steps][-2:] == ["repository",
                                                                                                   "launch"]
    repository, out = by_id["repository"], tmp_path / "out"
    assert repository.argv[repository.argv.index("--template") + 1] == "multimodal_runner"
    values = _sets(repository)
    assert values["visual_engine_dir"] == str(out / "visual_engine")
    assert values["llm_engine_dir"] == str(out / "engines" if family in ENC_DEC else out / "engines" / "llm")
    assert values["multimodal_family"] == family
    assert (values.get("takes_video") == "true") == (family in VIDEO)
    assert (values.get("runner_eras") == "0.16,1.x") == (family in LATE_ONLY)
    launch = by_id["launch"].argv
    assert launch[launch.index("--engine-models") + 1] == "multimodal_runner"
    check = _run(by_id["check-repository"])  # the dry run needs no engines
    assert check.returncode == 0, check.stderr
    _stand_in_engines(out, family, RECORDED[family])
    result = _run(repository)
    assert result.returncode == 0, result.stderr
    model = out / "triton_repo" / "multimodal_runner"
    assert [p.name for p in (out / "triton_repo").iterdir()] == ["multimodal_runner"]
    config = parse_model_config((model / "config.pbtxt").read_text(), "written")
    assert config.model_transaction_policy.decoupled and config.backend == "python"
    params = {k: v.string_value for k, v in config.parameters.items()}
    assert params["runner_class"] == "tensorrt_llm.runtime:MultimodalModelRunner"
    assert params["visual_engine_dir"] == values["visual_engine_dir"] and params["multimodal_family"] == family
    for part in ("model.py", "model_params.py", "runner_eras.yaml", "runner_lib/eras.py", "runner_lib/streaming.py",
                 "runner_lib/llm_call.py", "runner_lib/deltas.py"):
        assert (model / "1" / part).is_file(), part
    assert Path(repository.outputs[0]) == model / "config.pbtxt"


def test_a_visual_engine_of_another_family_is_refused_before_writing(tmp_path):
    plan = _plan(tmp_path, "kosmos-2")
    out = tmp_path / "out"
    _stand_in_engines(out, "kosmos-2", "fuyu")
    result = _run(next(s for s in plan.steps if s.id == "repository"))
    assert result.returncode != 0
    assert "multimodal_family is 'kosmos-2', but the visual engine" in result.stderr and "family 'fuyu'" in result.stderr
    assert not (out / "triton_repo").exists()


def test_the_011_plan_stops_after_the_engines(tmp_path):
    """0.11 keeps MultimodalModelRunner inside examples/multimodal/run.py (ertkonuk@05316d33): nothing to serve."""
    plan = _plan(tmp_path, "fuyu", "0.11")
    assert not plan.deploy_steps() and "from backend 0.12" in plan.triton_note


def test_a_nemo_checkpoint_without_a_tokenizer_folder_is_named_in_a_warning(tmp_path):
    checkpoint = tmp_path / "model.nemo"
    checkpoint.write_bytes(b"nemo")
    plan = make_plan(PlanConfig(family="neva", checkpoint=str(checkpoint), out=str(tmp_path / "out"),
                                trtllm_version="0.19", trtllm_root="/opt/trtllm"))
    assert any("reads its tokenizer from" in w for w in plan.warnings)




def _written_parameters(tmp_path: Path, family: str, **changed) -> tuple[subprocess.CompletedProcess, dict]:
    """Write the family's repository with stand-in engines, `changed` --set values replaced; (result, parameters)."""
    repository = next(s for s in _plan(tmp_path, family).steps if s.id == "repository")
    argv = list(repository.argv)
    for name, value in changed.items():
        at = [i for i, a in enumerate(argv) if a == "--set" and argv[i + 1].startswith(f"{name}=")]
        if at:
            argv[at[0] + 1] = f"{name}={value}"
        else:
            argv += ["--set", f"{name}={value}"]
    _stand_in_engines(tmp_path / "out", family, RECORDED[family])
    result = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    model = tmp_path / "out" / "triton_repo" / "multimodal_runner" / "config.pbtxt"
    if result.returncode:
        return result, {}
    config = parse_model_config(model.read_text(), "written")
    return result, {k: v.string_value for k, v in config.parameters.items()}


def test_the_late_only_families_carry_their_runner_requirements_into_the_repository(tmp_path):
    """[V]: qwen2_vl's session is cpp_llm_only, mllama's path passes no LoRA task, llava_onevision reads a video as
    video_num_frames frames (run.py's 8); each is served only by the 0.16 and 1.x runners."""
    expected = {"qwen2-vl": {"runner_required": "session=cpp_llm_only"}, "mllama": {"takes_lora": "false"},
                "llava-onevision": {"takes_video": "true", "runner_settings": "video_num_frames=8"}}
    for family, wanted in expected.items():
        result, params = _written_parameters(tmp_path / family, family)
        assert result.returncode == 0, result.stderr
        assert params["runner_eras"] == "0.16,1.x" and params["multimodal_family"] == family
        assert {k: params[k] for k in wanted} == wanted, family
        assert "encoder_input_features_data_type" not in params  # the multimodal templates' fact, not the runner's


def test_the_late_only_families_are_not_planned_for_a_release_before_0_16():
    from setup.catalog.builds import get_family, resolve_version

    for family in LATE_ONLY:
        assert not get_family(family).triton_served(resolve_version("0.15"))
        assert get_family(family).triton_served(resolve_version("0.16"))
        assert get_family(family).triton["runner_source"] == "R016" and "refused" not in get_family(family).triton


@pytest.mark.parametrize(("family", "changed", "message"), [
    ("qwen2-vl", {"runner_settings": "session=python"}, "the family requires session=cpp_llm_only"),
    ("qwen2-vl", {"runner_required": ""}, "qwen2-vl needs runner_required=session=cpp_llm_only"),
    ("mllama", {"takes_lora": "true"}, "mllama needs takes_lora=false"),
    ("llava-onevision", {"runner_eras": "0.13,1.x"}, "llava-onevision needs runner_eras=0.16,1.x"),
    ("llava-onevision", {"runner_eras": "newest"}, "runner_eras names newest"),
])
def test_a_deployment_that_drops_a_family_requirement_is_refused_before_writing(tmp_path, family, changed, message):
    result, _ = _written_parameters(tmp_path, family, **changed)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert not (tmp_path / "out" / "triton_repo").exists()
