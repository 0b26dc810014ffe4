"""Plan checks without a downloaded checkpoint: the catalogue's example shapes stand in, with a warning."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from setup.catalog import messages as M
from setup.catalog.builds import families
from setup.paths import PROJECT_ROOT
from setup.plan.checks import EXAMPLE_SHAPES_FILE, example_shapes
from setup.plan.config import PlanConfig
from setup.plan.planner import PlanError, make_plan


def _config(tmp_path, family: str = "llava-1.5", **fields) -> PlanConfig:
    return PlanConfig(family=family, checkpoint=str(tmp_path / "not downloaded"), out=str(tmp_path / "out"),
                      trtllm_version="0.19", **fields)


def test_a_plan_before_the_download_uses_the_example_shapes_and_says_so(tmp_path):
    plan = make_plan(_config(tmp_path, max_batch_size=64), checkpoint_optional=True)
    (warning,) = [w for w in plan.warnings if "does not exist yet" in w]
    assert "llava-hf/llava-1.5-7b-hf" in warning and "hidden_size 4096" in warning and "Run refuses" in warning
    launch = next(s for s in plan.steps if s.phase == "launch")
    pool = launch.argv[launch.argv.index("--multimodal-gpu0-cuda-mem-pool-bytes") + 1]
    assert pool == str(2 * 576 * 4096 * 64)  # sized from the example's hidden size, above the 300 MB default
    assert not (tmp_path / "not downloaded").exists() and not (tmp_path / "out").exists()


def test_tensor_parallelism_is_checked_against_the_example_heads(tmp_path):
    with pytest.raises(PlanError) as caught:
        make_plan(_config(tmp_path, tp=3), checkpoint_optional=True)
    assert caught.value.problems == [M.MSG_TP_HEADS.format(tp=3, heads=32,
                                                           config="llava-hf/llava-1.5-7b-hf (catalogue)")]


def test_a_run_still_refuses_a_missing_checkpoint(tmp_path):
    with pytest.raises(PlanError) as caught:
        make_plan(_config(tmp_path))
    assert caught.value.problems == [M.MSG_CHECKPOINT_MISSING.format(path=tmp_path / "not downloaded")]


def test_a_family_without_catalogue_shapes_plans_with_a_warning(tmp_path):
    plan = make_plan(_config(tmp_path, family="neva", trtllm_root="TensorRT-LLM"), checkpoint_optional=True)
    assert any(w.startswith(f"Checkpoint {tmp_path / 'not downloaded'} does not exist yet and the catalogue has "
                            "no shapes for NeVA") for w in plan.warnings), plan.warnings


def test_every_shape_entry_names_a_family_and_both_numbers():
    raw = yaml.safe_load(EXAMPLE_SHAPES_FILE.read_text())
    assert set(raw) <= set(families()) and len(raw) >= 10
    for family_id in raw:
        shapes = example_shapes(family_id)
        assert set(shapes) == {"hidden_size", "num_attention_heads"}
        assert shapes["hidden_size"] % shapes["num_attention_heads"] == 0, family_id


def test_cli_plan_prints_the_script_before_the_download(tmp_path):
    result = subprocess.run([sys.executable, "-m", "setup", "plan", "--family", "llava-1.5", "--checkpoint",
                             str(tmp_path / "later"), "--out", str(tmp_path / "out"), "--trtllm-version", "0.19"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "# Warning: Checkpoint" in result.stdout and "convert_checkpoint.py" in result.stdout
