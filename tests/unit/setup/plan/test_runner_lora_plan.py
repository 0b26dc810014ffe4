"""LoRA for the runner topology the way TensorRT-LLM does it: the 1.x runner's lora_uids are the adapters the LLM
engine was built with (trtllm-build --lora_plugin <dtype> --lora_dir A B: copied to lora/0, lora/1, ... and numbered
"0", "1", ... by LoraManager in that order). The plan bakes the LoRA folder's adapters into the LLM engine in order and
the repository records their names in that order (the runner model's lora_adapters parameter), which the app lists;
families whose path in the runner passes no LoRA (encoder-decoder LLMs, mllama) and pre-1.x runners refuse a LoRA
folder in a sentence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from setup.paths import PROJECT_ROOT
from setup.plan import messages as PM
from setup.plan.config import PlanConfig
from setup.plan.planner import make_plan
from setup.plan.types import PlanError
from setup.repo.writer import parse_model_config
from tests.build_standins import make_checkpoint
from tests.lora_helpers import TINY, write_peft


def _plan(tmp_path: Path, family: str, version: str = "1.0", adapters=("sailor", "poet")):
    folder = tmp_path / "adapters"
    for seed, name in enumerate(adapters):
        write_peft(folder / name, shape=TINY, seed=seed)
    return make_plan(PlanConfig(family=family, checkpoint=str(make_checkpoint(tmp_path / "ckpt")),
                                out=str(tmp_path / "out"), trtllm_version=version, trtllm_root="/opt/trtllm",
                                lora_dir=str(folder)))


def _after(argv: list[str], flag: str) -> list[str]:
    """The values after `flag` up to the next flag."""
    start = argv.index(flag) + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return argv[start:end]


def test_the_adapters_are_built_into_the_llm_engine_in_order_and_recorded_by_name(tmp_path):
    plan = _plan(tmp_path, "kosmos-2")
    (build,) = [s for s in plan.steps if s.id == "build-llm"]
    argv = list(build.argv)
    folder = tmp_path / "adapters"
    # the folder's adapters in the order scanned (by name): poet is lora_task_id 0, sailor 1
    assert _after(argv, "--lora_dir") == [str(folder / "poet"), str(folder / "sailor")]
    assert _after(argv, "--lora_plugin") == ["float16"] and "--max_lora_rank" in argv
    assert not [s for s in plan.steps if s.phase == "lora"]  # nothing converted for requests: it is in the engine
    (repository,) = [s for s in plan.steps if s.id == "repository"]
    argv = list(repository.argv)
    sets = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--set")
    assert sets["lora_adapters"] == "poet,sailor"


@pytest.mark.parametrize("family", ["blip2-t5", "nougat", "deplot", "mllama"])
def test_a_family_whose_runner_path_takes_no_lora_refuses_the_folder(tmp_path, family):
    with pytest.raises(PlanError) as caught:
        _plan(tmp_path, family)
    assert any("'s path in the runner passes no LoRA" in p for p in caught.value.problems), caught.value.problems


def test_a_runner_before_1x_refuses_the_folder(tmp_path):
    with pytest.raises(PlanError) as caught:
        _plan(tmp_path, "kosmos-2", version="0.19")
    assert PM.MSG_RUNNER_LORA_ERA.format(family="Kosmos-2", version="0.19") in caught.value.problems


def test_the_written_repository_records_the_adapters_in_load_order(tmp_path):
    """The plan's repository step, run with stand-in engine folders: the runner model's config carries lora_adapters,
    the parameter the app's runner deployment lists its adapters from."""
    plan = _plan(tmp_path, "kosmos-2")
    out = tmp_path / "out"
    (out / "visual_engine").mkdir(parents=True)
    (out / "visual_engine" / "config.json").write_text(json.dumps({"builder_config": {"model_type": "kosmos-2"}}))
    (out / "engines" / "llm").mkdir(parents=True)
    (out / "engines" / "llm" / "config.json").write_text("{}")
    (repository,) = [s for s in plan.steps if s.id == "repository"]
    result = subprocess.run(list(repository.argv), cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    config = parse_model_config((out / "triton_repo" / "multimodal_runner" / "config.pbtxt").read_text(), "written")
    assert config.parameters["lora_adapters"].string_value == "poet,sailor"
