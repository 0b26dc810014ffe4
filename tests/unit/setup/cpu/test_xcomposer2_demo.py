"""The InternLM-XComposer2 CPU twin's repository (setup/cpu/xcomposer2_demo.py): the community layout with the CPU
engine (Partial LoRA on) and a preprocessing that runs the CPU encoder; the twin's own writer check."""

from __future__ import annotations

import json

import pytest

from setup.catalog.families import get_family
from setup.cpu.xcomposer2_demo import COPIED_AS, twin_encoder_family, write_xcomposer2_demo_repository
from setup.repo.writer import SHARED_DIR, parse_model_config
from setup.repo.xcomposer2_checks import check_xcomposer2_cpu

ROWS = get_family("cpu-ocr").visual_tokens_per_image  # the twin's encoder rows per image (the CPU demo's)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return write_xcomposer2_demo_repository(tmp_path_factory.mktemp("xc2-twin") / "repo", log=lambda *_: None)


def params(repo, model) -> dict[str, str]:
    config = parse_model_config((repo / model / "config.pbtxt").read_text(), model)
    return {k: v.string_value for k, v in config.parameters.items()}


def test_the_twin_has_the_community_layout_with_cpu_pieces(repo):
    assert sorted(p.name for p in repo.iterdir()) == ["ensemble", "postprocessing", "preprocessing", "tensorrt_llm",
                                                     "tensorrt_llm_bls"]
    code = repo / "preprocessing" / "1"
    assert (code / COPIED_AS).is_file() and (code / "cpu_runtime" / "encoder" / "encoder.py").is_file()
    assert (code / "model_params.py").read_bytes() == (SHARED_DIR / "model_params.py").read_bytes()  # the layout's
    assert "class CpuVisual" in (code / "model.py").read_text()
    assert (repo / "tensorrt_llm" / "1" / "cpu_runtime" / "engine").is_dir()  # the CPU engine in the tensorrt_llm slot
    pre = params(repo, "preprocessing")
    encoder = json.loads(open(pre["vit_plan_dir"]).read())
    assert pre["image_marker"] == "<ImageHere>" and int(pre["tokens_per_image"]) == ROWS
    assert encoder["builder_config"]["image_size"] == [490, 490]  # XComposer2's pixels, the CPU encoder's rows
    assert encoder["builder_config"]["mean"] == [0.48145466, 0.4578275, 0.40821073]
    engine = json.loads(open(pre["gpt_model_path"] + "/config.json").read())
    assert engine["pretrained_config"]["has_partial_lora_mask"] is True
    assert engine["build_config"]["max_prompt_embedding_table_size"] == engine["build_config"]["max_batch_size"] * ROWS
    assert params(repo, "ensemble")["multimodal_family"] == "internlm-xcomposer2"
    assert twin_encoder_family().visual_tokens_per_image == ROWS


def test_the_twin_check_refuses_what_would_not_line_up(repo, tmp_path):
    values = {**params(repo, "preprocessing"), "engine_dir": params(repo, "preprocessing")["gpt_model_path"]}
    assert check_xcomposer2_cpu(values).tokens_per_image == ROWS
    with pytest.raises(ValueError, match=f"makes {ROWS} rows per image"):
        check_xcomposer2_cpu({**values, "tokens_per_image": 1225})
    engine = tmp_path / "engine"
    engine.mkdir()
    config = json.loads(open(values["engine_dir"] + "/config.json").read())
    config["pretrained_config"].pop("has_partial_lora_mask")
    (engine / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="has_partial_lora_mask"):
        check_xcomposer2_cpu({**values, "engine_dir": str(engine)})
