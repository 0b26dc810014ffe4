"""The template twins' repositories (setup/cpu/family_twins.py): each family's own template and Triton parameters
with the CPU engine built to the family's defaults and, for image families, the CPU encoder recording the family's
model type, pixels, rows and format."""

from __future__ import annotations

import json

import pytest

from setup.catalog.builds import families as build_families
from setup.catalog.families import get_family
from setup.cpu.family_twins import (
    TWIN_PADDING,
    format_text,
    template_twins,
    twin_engine_spec,
    write_family_twin_repository,
)
from setup.repo.writer import RepoError, parse_model_config

IMAGE_TWINS = ("blip2-opt", "llava-1.5", "vila")
TEXT_TWINS = ("gpt", "llama")
MULTIMODAL_MODELS = ["ensemble", "multimodal_encoders", "postprocessing", "preprocessing", "tensorrt_llm",
                     "tensorrt_llm_bls"]


def params(repo, model) -> dict[str, str]:
    config = parse_model_config((repo / model / "config.pbtxt").read_text(), model)
    return {k: v.string_value for k, v in config.parameters.items()}


@pytest.fixture(scope="module")
def repos(tmp_path_factory, cpu_model_dir):
    root = tmp_path_factory.mktemp("family-twins")
    return {family: write_family_twin_repository(root / family, family, log=lambda *_: None)
            for family in template_twins()}


def test_the_twins_come_from_the_family_files():
    assert set(template_twins()) == {*IMAGE_TWINS, *TEXT_TWINS}
    for family in ("qwen2-vl", "mllama", "llava-onevision", "kosmos-2", "internlm-xcomposer2", "cpu-ocr"):
        assert family not in template_twins()  # the HF-processor families, runner and community twins are apart


@pytest.mark.parametrize("family", IMAGE_TWINS)
def test_an_image_twin_is_the_multimodal_template_with_the_family_s_format(repos, family):
    repo, fam, defaults = repos[family], get_family(family), build_families()[family].defaults
    assert sorted(p.name for p in repo.iterdir()) == MULTIMODAL_MODELS
    assert (repo / "tensorrt_llm" / "1" / "cpu_runtime" / "engine").is_dir()  # the CPU engine in the tensorrt_llm slot
    assert (repo / "multimodal_encoders" / "1" / "cpu_runtime" / "encoder").is_dir()
    assert params(repo, "tensorrt_llm_bls")["multimodal_family"] == family
    encoder_dir = params(repo, "multimodal_encoders")["multimodal_model_path"]
    encoder = json.loads(open(encoder_dir + "/config.json").read())
    builder = encoder["builder_config"]
    assert builder["model_type"] == fam.model_type and builder["num_visual_features"] == fam.visual_tokens_per_image
    assert builder["image_size"] == [fam.preprocess.height, fam.preprocess.width]
    assert builder["mean"] == list(fam.preprocess.mean) and builder["std"] == list(fam.preprocess.std)
    assert encoder["perception"] == get_family("cpu-ocr").extra["perception"]  # it describes pictures as cpu-ocr's
    assert encoder["twin"] == {"family": family, "format": format_text(fam), "padding": TWIN_PADDING}
    engine = json.loads(open(params(repo, "tensorrt_llm")["gpt_model_path"] + "/config.json").read())["build_config"]
    images = int(params(repo, "preprocessing")["max_num_images"])
    assert images == defaults["max_num_images"]
    assert engine["max_batch_size"] == defaults["max_batch_size"] and engine["max_input_len"] == defaults["max_input_len"]
    assert engine["max_prompt_embedding_table_size"] == defaults["max_batch_size"] * fam.visual_tokens_per_image * images


def test_the_format_line_names_pixels_rows_and_user_text():
    assert format_text(get_family("blip2-opt")) == ("blip2-opt: 224x224 px stretch, 32 rows per image, "
                                                    "user text '{images}Question: {text} Answer:'")
    assert format_text(get_family("llava-1.5")).startswith("llava-1.5: 336x336 px shortest_side_crop, 576 rows")


@pytest.mark.parametrize("family", TEXT_TWINS)
def test_a_text_twin_is_the_inflight_batcher_template_without_image_inputs(repos, family):
    repo, defaults = repos[family], build_families()[family].defaults
    assert sorted(p.name for p in repo.iterdir()) == ["ensemble", "postprocessing", "preprocessing", "tensorrt_llm",
                                                     "tensorrt_llm_bls"]
    for model in ("ensemble", "tensorrt_llm_bls"):
        config = parse_model_config((repo / model / "config.pbtxt").read_text(), model)
        assert not {i.name for i in config.input} & {"image_input", "image_bytes_input", "image_url_input"}
        assert "multimodal_family" not in params(repo, model)
    engine = json.loads(open(params(repo, "tensorrt_llm")["gpt_model_path"] + "/config.json").read())["build_config"]
    assert (engine["max_input_len"], engine["max_seq_len"]) == (defaults["max_input_len"], defaults["max_seq_len"])
    assert engine["max_prompt_embedding_table_size"] == 0 == twin_engine_spec(family).max_prompt_embedding_table_size


def test_a_family_without_a_template_twin_is_refused_by_name(tmp_path):
    with pytest.raises(RepoError, match="'kosmos-2' has no template twin; the families with one are: blip2-opt"):
        write_family_twin_repository(tmp_path / "repo", "kosmos-2", log=lambda *_: None)
    assert not (tmp_path / "repo").exists()
