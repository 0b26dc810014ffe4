"""The build catalogue (`build:` of setup/data/families/*.yaml) against the facts of the references.

TensorRT-LLM is not installable here, so flags are checked against the documented flag lists
(tests/build_standins.py, from shared/reference/trtllm_backend_spec.md §7 and multimodal_spec.md §3).
"""

from __future__ import annotations

import pytest

from setup.catalog.builds import by_era, families, get_family, resolve_version
from tests.build_standins import TRTLLM_BUILD_019

FAMILY_IDS = {"llama", "gpt", "blip2-opt", "blip2-t5", "llava-1.5", "llava-next", "vila", "cogvlm", "deplot", "fuyu",
              "kosmos-2", "neva", "nougat", "phi-3-vision", "video-neva", "internlm-xcomposer2", "llava-onevision",
              "mllama", "qwen2-vl"}
# Visual builder --model_type choices (multimodal_spec.md §3, latest) plus the Njuapp fork's XComposer2 name.
BUILDER_TYPES = {"blip2", "llava", "llava_next", "llava_onevision", "llava_onevision_lmms", "vila", "nougat", "cogvlm",
                 "fuyu", "pix2struct", "neva", "kosmos-2", "video-neva", "phi-3-vision", "phi-4-multimodal", "mllama",
                 "internvl", "qwen2_vl", "internlm-xcomposer2", "qwen2_audio", "pixtral"}
FORK_TYPES = {"internlm-xcomposer2-vl-7b"}
ERAS = ("0.11", "0.12", "0.16", "0.19", "0.20", "1.1")


def test_every_family_of_the_issue_has_an_entry():
    assert set(families()) == FAMILY_IDS


@pytest.mark.parametrize("family_id", sorted(FAMILY_IDS))
def test_entry_is_complete(family_id):
    family = get_family(family_id)
    assert family.kind in ("text", "vlm", "encdec")
    assert family.dtypes and family.engines
    for era in ERAS:
        assert family.convert_script(era).endswith(".py")
    assert "/models/" not in family.convert_script("0.19"), "0.19 keeps examples flat"
    assert "core" in family.convert_script("0.20") or "contrib" in family.convert_script("0.20") \
        or "quantization" in family.convert_script("0.20")
    for engine in family.engines:
        for era in ERAS:
            flags = {f"--{name}" for name in engine.flags_for(era)} | {f"--{name}" for name in engine.limits}
            assert flags - {"--max_seq_len"} <= TRTLLM_BUILD_019, engine.name
    assert family.triton.get("note")
    if not family.triton.get("since"):
        assert family.triton.get("instead"), "an unserved family must say what serves it instead"


@pytest.mark.parametrize("family_id", sorted(f for f in FAMILY_IDS if f not in ("llama", "gpt")))
def test_visual_builder_type_is_a_documented_choice(family_id):
    family = get_family(family_id)
    assert family.is_multimodal and family.tokens_per_image > 0
    assert family.visual_model_type("0.19") in BUILDER_TYPES
    assert family.visual_model_type("0.11") in BUILDER_TYPES | FORK_TYPES


def test_documented_numbers():
    assert get_family("llava-1.5").tokens_per_image == 576
    assert get_family("llava-1.5").visual["image_size"] == [336, 336]
    assert get_family("blip2-opt").tokens_per_image == 32
    assert get_family("blip2-opt").convert["flags"] == {"model_type": "blip2"}
    assert get_family("vila").tokens_per_image == 196
    assert get_family("internlm-xcomposer2").tokens_per_image == 1225
    assert get_family("qwen2-vl").tokens_per_image == 324
    assert get_family("mllama").tokens_per_image == 6404


def test_cogvlm_is_bf16_only_and_pads_input_before_019():
    cogvlm = get_family("cogvlm")
    assert cogvlm.dtypes == ["bfloat16"]
    (engine,) = cogvlm.engines
    assert engine.flags_for("0.11")["remove_input_padding"] == "disable"
    assert engine.flags_for("0.12")["remove_input_padding"] == "disable"
    assert engine.flags_for("0.19")["remove_input_padding"] == "enable"
    assert cogvlm.convert["flags"] == {"use_prompt_tuning": True}
    assert cogvlm.triton_served(resolve_version("0.19")) and cogvlm.triton["template"] == "multimodal_runner"


def test_lora_support():
    assert get_family("llama").lora["supported"] and get_family("gpt").lora["supported"]
    xcomposer = get_family("internlm-xcomposer2")
    assert xcomposer.lora["required"] and xcomposer.lora["default_rank"] == 256
    assert not get_family("llava-1.5").lora["supported"]


def test_triton_support_depends_on_version():
    llava = get_family("llava-1.5")
    assert llava.triton_served(resolve_version("0.13")) and llava.triton_served(resolve_version("0.19.0"))
    assert not llava.triton_served(resolve_version("0.11"))
    for late in ("qwen2-vl", "mllama", "llava-onevision"):  # the 0.16 and 1.x runners handle them (runner_eras.yaml)
        assert get_family(late).triton_served(resolve_version("1.2")) and get_family(late).triton["since"] == "0.16"
        assert get_family(late).triton_served(resolve_version("0.19"))
        assert not get_family(late).triton_served(resolve_version("0.15"))
        assert get_family(late).triton["parameters"]["runner_eras"] == "0.16,1.x"
    for runner in ("cogvlm", "video-neva", "nougat"):  # 0.11 has no importable MultimodalModelRunner
        assert get_family(runner).triton_served(resolve_version("0.12"))
        assert not get_family(runner).triton_served(resolve_version("0.11"))
    assert get_family("mllama").triton["parameters"]["encoder_input_features_data_type"] == "TYPE_BF16"
    for runner in ("cogvlm", "phi-3-vision", "llava-next", "nougat", "deplot", "blip2-t5"):  # run.py's runner
        assert get_family(runner).triton_served(resolve_version("0.19"))
        assert get_family(runner).triton["topology"] == "runner"


def test_version_eras():
    assert resolve_version("0.11.0").era.key == "0.11"
    assert resolve_version("0.15").era.key == "0.12"
    assert resolve_version("0.19.0").era.key == "0.19"
    assert resolve_version("0.16").era.key == "0.16" and resolve_version("0.18.2").era.key == "0.16"
    assert resolve_version("0.20").era.key == "0.20" and resolve_version("1.0").era.key == "0.20"
    assert resolve_version("1.1").era.key == "1.1" and resolve_version("1.2.0").era.key == "1.1"
    assert [resolve_version(v).era.examples_layout for v in ("0.11", "0.15", "0.19", "0.20", "1.2")] == \
        ["flat", "flat", "flat", "models", "models"]
    assert resolve_version("0.11").era.switch_flags == ("use_fused_mlp",)
    assert resolve_version("0.12").era.switch_flags == ()
    assert resolve_version("0.19").era.visual_builder == "examples/multimodal/build_multimodal_engine.py"
    assert resolve_version("0.18").era.visual_builder == "examples/multimodal/build_visual_engine.py"
    assert resolve_version("1.2").era.visual_builder == "examples/models/core/multimodal/build_multimodal_engine.py"
    assert all(resolve_version(v).era.sources for v in ("0.11", "0.15", "0.19", "0.20", "1.2"))
    assert resolve_version("0.11").era.seq_len_flag == "max_output_len"
    assert resolve_version("0.19").era.multimodal_path_parameter == "multimodal_model_path"
    assert resolve_version("0.15").era.multimodal_path_parameter == "visual_model_path"
    with pytest.raises(ValueError, match="oldest supported"):
        resolve_version("0.9")
    with pytest.raises(ValueError, match="not a version number"):
        resolve_version("latest")


def test_by_era_picks_newest_key_not_above():
    value = {"0.11": "a", "0.19": "b"}
    assert by_era(value, "0.11") == "a" and by_era(value, "0.12") == "a" and by_era(value, "0.19") == "b"
    assert by_era("plain", "0.19") == "plain"
    assert by_era({"gemm_plugin": "float16"}, "0.19") == {"gemm_plugin": "float16"}
