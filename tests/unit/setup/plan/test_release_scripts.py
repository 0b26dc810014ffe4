"""Plans per release name only scripts that exist in that release's tree and flags its tools accept.

The trees are tests/data/upstream/trtllm_trees.yaml (with their sources); each becomes a stand-in
checkout of empty files, given to the plan as --trtllm-root.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from setup.plan.config import PlanConfig
from setup.plan.planner import PlanError, make_plan
from setup.plan.scripts import candidates
from setup.plan.steps import flag_args
from tests.build_standins import CONVERT, TRTLLM_BUILD_011, TRTLLM_BUILD_019, VISUAL, make_checkpoint

TREES = yaml.safe_load((Path(__file__).parents[3] / "data" / "upstream" / "trtllm_trees.yaml").read_text())
FAMILIES = {"llama": {"tp": 2}, "llava-1.5": {}, "blip2-opt": {}, "cogvlm": {}, "qwen2-vl": {}, "mllama": {},
            "internlm-xcomposer2": {}}
# Files a family's plan takes from a fork's checkout at releases before upstream has the family (the Njuapp
# fork commits InternLM-XComposer2's adapter_config.json in examples/multimodal; its conversion writes no config).
FORK_FILES = {("internlm-xcomposer2", "0.11"): ["examples/multimodal/adapter_config.json"],
              ("internlm-xcomposer2", "0.15"): ["examples/multimodal/adapter_config.json"]}
TOO_NEW = {("qwen2-vl", "0.11"), ("qwen2-vl", "0.15"), ("mllama", "0.11")}  # the family's min_version


def checkout(root: Path, release: str) -> Path:
    for script in TREES[release]["scripts"]:
        (root / script).parent.mkdir(parents=True, exist_ok=True)
        (root / script).write_text("")
    return root


def plan(tmp_path, family, release, root=None, **fields):
    ckpt = make_checkpoint(tmp_path / "ckpt")
    if root is None:
        root = checkout(tmp_path / "trtllm", release)
        for relative in FORK_FILES.get((family, release), ()):
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text("{}")
    return make_plan(PlanConfig(family=family, checkpoint=str(ckpt), out=str(tmp_path / "out"), trtllm_version=release,
                                trtllm_root=str(root or checkout(tmp_path / "trtllm", release)), **fields))


def flags(argv) -> set[str]:
    return {a for a in argv if a.startswith("--")}


@pytest.mark.parametrize("release", sorted(TREES))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_plans_name_only_scripts_of_the_release(tmp_path, family, release):
    if (family, release) in TOO_NEW:
        with pytest.raises(PlanError, match="needs TensorRT-LLM|at least|from"):
            plan(tmp_path, family, release, **FAMILIES[family])
        return
    made = plan(tmp_path, family, release, **FAMILIES[family])
    root = (tmp_path / "trtllm").resolve()
    build_flags = TRTLLM_BUILD_011 if release == "0.11" else TRTLLM_BUILD_019
    for step in made.steps:
        if step.phase in ("convert", "visual", "lora"):
            assert Path(step.argv[1]).is_file(), step.argv[1]
            assert str(Path(step.argv[1]).relative_to(root)) in TREES[release]["scripts"]
        if step.phase == "convert":
            assert flags(step.argv[2:]) <= CONVERT
        if step.phase == "visual":
            assert flags(step.argv[2:]) <= VISUAL
        if step.phase == "build":
            assert flags(step.argv) <= build_flags, flags(step.argv) - build_flags
            for switch in TREES[release]["build_switches"]:
                if f"--{switch}" in step.argv:  # a bare switch takes no value
                    following = step.argv[step.argv.index(f"--{switch}") + 1]
                    assert following.startswith("--"), step.argv


def test_fused_mlp_is_a_bare_switch_at_011_only():
    assert flag_args({"use_fused_mlp": "enable"}, "float16", ("use_fused_mlp",)) == ["--use_fused_mlp"]
    assert flag_args({"use_fused_mlp": "disable"}, "float16", ("use_fused_mlp",)) == []
    assert flag_args({"use_fused_mlp": "enable"}, "float16") == ["--use_fused_mlp", "enable"]


def test_script_missing_from_the_checkout_is_a_plan_problem(tmp_path):
    root = checkout(tmp_path / "trtllm", "0.15")
    (root / "examples/multimodal/build_visual_engine.py").unlink()
    with pytest.raises(PlanError, match="build_visual_engine.py is not in the TensorRT-LLM checkout"):
        plan(tmp_path, "llava-1.5", "0.15", root=root)


def test_checkout_layout_wins_over_the_recorded_one(tmp_path):
    root = checkout(tmp_path / "trtllm", "1.2")  # a newer tree while the plan says 0.19
    made = plan(tmp_path, "llama", "0.19", root=root)
    assert made.steps[1].argv[1].endswith("examples/models/core/llama/convert_checkpoint.py")
    assert not any("No TensorRT-LLM checkout" in w for w in made.warnings)


def test_without_a_checkout_the_header_says_the_layout_is_recorded(tmp_path):
    made = plan(tmp_path, "llama", "1.2", root=tmp_path / "nowhere")
    assert made.steps[1].argv[1].endswith("examples/models/core/llama/convert_checkpoint.py")
    assert "# Warning: No TensorRT-LLM checkout at" in made.to_shell()


def test_candidates_cover_both_layouts_and_builder_names():
    found = candidates("examples/multimodal/build_visual_engine.py")
    assert "examples/models/core/multimodal/build_multimodal_engine.py" in found
    assert candidates("examples/hf_lora_convert.py") == ["examples/hf_lora_convert.py"]
