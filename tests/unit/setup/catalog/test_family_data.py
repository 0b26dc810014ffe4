"""One file per model family: the image view and the build catalogue read the same files."""

from __future__ import annotations

import pytest
import yaml

from setup.catalog import builds as build_catalogue
from setup.catalog import families
from setup.catalog.family_data import FAMILIES_DIR, FamilyError, family_files

BOTH = {"llava-1.5", "blip2-opt", "vila", "mllama", "llava-onevision", "qwen2-vl", "internlm-xcomposer2"}


def test_every_file_is_in_a_view_and_ids_are_hyphenated():
    files = family_files()
    image, build = set(families.families()), set(build_catalogue.families())
    assert set(files) == image | build
    assert image & build == BOTH
    assert "cpu-ocr" in image - build and {"llama", "gpt", "cogvlm", "fuyu"} <= build - image
    assert all("_" not in family_id for family_id in files)
    assert not (FAMILIES_DIR.parent / "build").exists()


@pytest.mark.parametrize("family_id", sorted(BOTH))
def test_shared_facts_agree_between_the_views(family_id):
    image, build = families.get_family(family_id), build_catalogue.get_family(family_id)
    assert image.display_name == build.name
    assert image.max_num_images == build.max_images
    if image.visual_tokens_per_image is not None:
        assert build.tokens_per_image == image.visual_tokens_per_image
    if image.preprocess is not None:
        assert build.visual["image_size"] == [image.preprocess.height, image.preprocess.width]
    assert bool(build.triton.get("hf_model_path")) == image.needs_hf_model_path


def test_budget_families_keep_their_build_numbers():
    assert families.get_family("llava-onevision").visual_tokens_per_image is None
    assert build_catalogue.get_family("llava-onevision").tokens_per_image == 7300
    mllama = build_catalogue.get_family("mllama")
    assert mllama.tokens_per_image == 6404 and mllama.visual["image_size"] == [560, 560]
    # the top-level image fact fills the build view's parameters, after the family's own (runner) ones
    assert mllama.triton["parameters"] == {"runner_eras": "0.16,1.x", "takes_lora": False,
                                           "encoder_input_features_data_type": "TYPE_BF16"}


def test_views_do_not_share_mutable_state():
    family_files()["vila"]["build"]["dtypes"].append("float32")
    assert build_catalogue.get_family("vila").dtypes == ["float16"]


def write(folder, family_id, data):
    (folder / f"{family_id}.yaml").write_text(yaml.safe_dump(data))


def test_a_shared_fact_is_written_once(tmp_path):
    write(tmp_path, "x", {"id": "x", "display_name": "X", "image_input": "image_input",
                          "visual_tokens_per_image": 8, "build": {"kind": "vlm", "visual": {"tokens_per_image": 8}}})
    with pytest.raises(FamilyError, match="visual_tokens_per_image is given at the top level"):
        family_files(tmp_path)


@pytest.mark.parametrize("data, match", [
    ({"id": "other", "build": {}}, "differs from the file name"),
    ({"id": "x", "display_name": "X"}, "needs image fields"),
    (["not", "a", "mapping"], "expected a mapping"),
])
def test_malformed_files_are_named(tmp_path, data, match):
    write(tmp_path, "x", data)
    with pytest.raises(FamilyError, match=match):
        family_files(tmp_path)
