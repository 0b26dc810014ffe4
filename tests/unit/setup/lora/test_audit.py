"""setup/lora/audit.py and adapter_facts.py: adapters made here with the demo model's (SmolLM2-135M) shapes,
audited against the CPU engine's config.json as the build writes it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from setup.lora.adapter_facts import read_adapter
from setup.lora.audit import LoraTarget, audit, engine_target, model_target
from setup.lora.convert import convert_peft, save_converted
from tests.lora_helpers import SMOL, TRT_ALL, module_dims, write_engine_config, write_model_config, write_peft

VOCAB = 49152  # SmolLM2's vocabulary
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


@pytest.fixture
def engine(tmp_path):
    folder = write_engine_config(tmp_path / "engine", max_rank=64, modules=TRT_ALL)
    config = json.loads((folder / "config.json").read_text())
    config["pretrained_config"]["vocab_size"] = VOCAB
    config["hf_model_dir"] = "../../models/smollm2-135m-instruct"
    (folder / "config.json").write_text(json.dumps(config))
    return engine_target(folder, server="CPU engine")


def add_tensors(folder, tensors: dict[str, tuple[int, ...]], config: dict | None = None):
    """Add weights of the given shapes (and adapter_config.json keys) to a PEFT folder written by write_peft."""
    from safetensors.numpy import load_file

    path = folder / "adapter_model.safetensors"
    weights = load_file(str(path))
    weights.update({key: np.zeros(shape, dtype=np.float32) for key, shape in tensors.items()})
    save_file(weights, str(path))
    if config:
        current = json.loads((folder / "adapter_config.json").read_text())
        (folder / "adapter_config.json").write_text(json.dumps({**current, **config}))
    return folder


def lm_params(rank: int, modules, layers: int) -> int:
    return layers * sum(rank * sum(module_dims(m)) for m in modules)


def test_a_text_adapter_on_its_engine_is_applied_whole(tmp_path, engine):
    folder = write_peft(tmp_path / "full", rank=8, modules=ATTENTION, layers=(0, 1),
                        config_extra={"base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct"})
    result = audit(read_adapter(folder), engine)
    assert not result.refused and not result.partial
    assert result.applied.names == ATTENTION and result.applied_percent == 100
    assert result.applied.params == result.total_params == lm_params(8, ATTENTION, 2)
    assert result.dropped == () and result.rank == 8 and result.dtype == "float32"
    assert not any("another checkpoint" in f for f in result.flags)  # the same model by name


def test_vision_tower_modules_of_a_vlm_adapter_are_dropped_with_their_share(tmp_path, engine):
    folder = write_peft(tmp_path / "vlm", rank=8, modules=ATTENTION, layers=(0, 1))
    tower = {f"base_model.model.vision_model.encoder.layers.{layer}.self_attn.{m}.lora_{ab}.weight":
             ((8, 768) if ab == "A" else (768, 8)) for layer in (0, 1) for m in ("q_proj", "v_proj") for ab in "AB"}
    add_tensors(folder, tower)
    result = audit(read_adapter(folder), engine)
    language, vision = lm_params(8, ATTENTION, 2), 4 * 8 * (768 + 768)
    assert (language, vision) == (61440, 49152)
    assert result.partial and not result.refused
    assert result.applied.params == language and result.total_params == language + vision
    assert result.applied_percent == 56  # 61440 / 110592 = 55.6 %
    (dropped,) = result.dropped
    assert dropped.names == ("vision_model.*",) and dropped.params == vision and result.percent(vision) == 44
    assert "language model only" in dropped.reason


def test_the_vision_tower_never_becomes_language_rows_when_converted(tmp_path):
    folder = write_peft(tmp_path / "vlm", rank=4, modules=("q_proj",), layers=(0,))
    add_tensors(folder, {"base_model.model.vision_model.encoder.layers.0.self_attn.q_proj.lora_A.weight": (4, 768),
                         "base_model.model.vision_model.encoder.layers.0.self_attn.q_proj.lora_B.weight": (768, 4)})
    converted = convert_peft(folder)
    assert [(r.layer, r.module, r.in_size) for r in converted.rows] == [(0, "q_proj", SMOL["hidden"])]


def test_rank_above_the_engines_limit_is_refused(tmp_path):
    engine = engine_target(write_engine_config(tmp_path / "engine", max_rank=8), server="TensorRT-LLM engine")
    result = audit(read_adapter(write_peft(tmp_path / "big", rank=16)), engine)
    assert result.refused
    assert result.refusals == ("The adapter's rank 16 is above the TensorRT-LLM engine's max_lora_rank 8; it cannot "
                               "be loaded.",)


def test_an_adapter_for_another_base_model_is_refused_naming_both(tmp_path, engine):
    other = {"hidden": 2048, "inter": 8192, "heads": 32, "kv": 8, "head": 64, "layers": 16}
    folder = write_peft(tmp_path / "llama", rank=8, shape=other,
                        config_extra={"base_model_name_or_path": "meta-llama/Llama-3.2-1B"})
    result = audit(read_adapter(folder), engine)
    assert result.refused
    (reason,) = result.refusals
    assert "meta-llama/Llama-3.2-1B" in reason and "smollm2-135m-instruct" in reason
    assert "2048 -> 2048" in reason and "576 -> 576" in reason


def test_too_many_layers_is_another_base_model(tmp_path, engine):
    folder = write_peft(tmp_path / "deep", rank=4, layers=(0, 31))
    (reason,) = audit(read_adapter(folder), engine).refusals
    assert "layer 31" in reason and "30 layers" in reason


def test_modules_to_save_are_flagged_and_embedding_lora_dropped(tmp_path, engine):
    folder = write_peft(tmp_path / "saved", rank=4, modules=("q_proj",), layers=(0,))
    add_tensors(folder, {"base_model.model.lm_head.weight": (VOCAB, SMOL["hidden"]),
                         "base_model.model.model.embed_tokens.lora_embedding_A": (4, VOCAB),
                         "base_model.model.model.embed_tokens.lora_embedding_B": (SMOL["hidden"], 4)},
                config={"modules_to_save": ["lm_head"]})
    result = audit(read_adapter(folder), engine)
    assert not result.refused and result.partial
    assert any("modules_to_save: lm_head" in f and "not applied" in f for f in result.flags)
    (dropped,) = result.dropped
    assert dropped.names == ("embed_tokens",) and dropped.params == 4 * (VOCAB + SMOL["hidden"])
    assert result.total_params == 4 * (576 + 576) + dropped.params  # modules_to_save weights are no LoRA share


def test_dora_is_refused_with_the_reason(tmp_path, engine):
    result = audit(read_adapter(write_peft(tmp_path / "dora", config_extra={"use_dora": True})), engine)
    assert result.refused and "DoRA" in result.refusals[0] and "magnitude" in result.refusals[0]


def test_other_peft_types_are_refused(tmp_path, engine):
    folder = write_peft(tmp_path / "ia3", config_extra={"peft_type": "IA3"})
    assert "IA3 adapter" in audit(read_adapter(folder), engine).refusals[0]


def test_modules_the_engine_was_not_built_for_are_dropped(tmp_path):
    engine = engine_target(write_engine_config(tmp_path / "engine", modules=("attn_q", "attn_v")))
    result = audit(read_adapter(write_peft(tmp_path / "qkvo", rank=4, modules=ATTENTION, layers=(0,))), engine)
    assert result.applied.names == ("q_proj", "v_proj") and result.partial
    (dropped,) = result.dropped
    assert dropped.names == ("k_proj", "o_proj") and "attn_q, attn_v" in dropped.reason
    assert result.applied.params == 4 * (1152 + 768) and result.applied_percent == 50  # q, v of q, k, v, o


def test_vllm_applies_every_language_module_and_knows_no_limits(tmp_path):
    result = audit(read_adapter(write_peft(tmp_path / "a", rank=128, modules=ATTENTION)), LoraTarget(server="vLLM"))
    assert not result.refused and result.applied_percent == 100


def test_a_bin_is_read_with_weights_only_and_a_converted_pair_by_its_rows(tmp_path, engine):
    folder = write_peft(tmp_path / "bin", rank=4, modules=("q_proj", "down_proj"), fmt="bin")
    assert audit(read_adapter(folder), engine).applied.names == ("q_proj", "down_proj")
    save_converted(convert_peft(folder), tmp_path / "pair")
    pair = audit(read_adapter(tmp_path / "pair", engine.shapes), engine)
    assert pair.applied.params == lm_params(4, ("q_proj", "down_proj"), 2) and pair.dtype == "float16"


def test_a_bad_safetensors_header_is_one_sentence(tmp_path):
    folder = write_peft(tmp_path / "bad")
    (folder / "adapter_model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="could not be read as plain tensors"):
        read_adapter(folder)


@pytest.mark.parametrize("nested", [None, "text_config"])
def test_a_model_folders_config_is_a_target_that_refuses_another_base_model(tmp_path, nested):
    target = model_target(write_model_config(tmp_path / "smollm2-135m-instruct", nested=nested), "Triton llmapi")
    assert target.num_layers == 30 and target.vocab_size == VOCAB and target.max_rank is None
    fits = write_peft(tmp_path / "fits", rank=8, modules=ATTENTION + ("gate_proj", "down_proj"), layers=(0, 29))
    result = audit(read_adapter(fits), target)
    assert not result.refused and result.applied_percent == 100 and result.served_model == "smollm2-135m-instruct"
    other = {"hidden": 2048, "inter": 8192, "heads": 32, "kv": 8, "head": 64, "layers": 16}
    llama = write_peft(tmp_path / "llama", rank=8, shape=other,
                       config_extra={"base_model_name_or_path": "meta-llama/Llama-3.2-1B"})
    (reason,) = audit(read_adapter(llama), target).refusals
    assert "meta-llama/Llama-3.2-1B" in reason and "smollm2-135m-instruct" in reason and "2048 -> 2048" in reason


def test_a_folder_without_a_language_models_config_is_one_sentence(tmp_path):
    from setup.lora.convert import LoraConvertError

    with pytest.raises(LoraConvertError, match="has no|cannot be read"):
        model_target(tmp_path, "vLLM")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "clip"}))
    with pytest.raises(LoraConvertError, match="not a language model's config"):
        model_target(tmp_path, "vLLM")
