"""setup/lora/convert.py: PEFT -> backend tensors, checked against peft itself and against engine configs."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from setup.__main__ import main
from setup.lora.convert import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    LoraConvertError,
    build_tensors,
    convert_peft,
    from_storage,
    load_converted,
    save_converted,
    to_storage,
)
from setup.lora.engine import check_against_engine, load_engine_spec
from tests.lora_helpers import (
    ALL_MODULES,
    DEMO_ADAPTERS,
    TINY,
    tiny_llama,
    write_engine_config,
    write_peft,
)

PROMPT_IDS = [[5, 17, 42, 99, 3, 64, 7, 120, 33, 8]]


def _convert_cli(peft_dir: Path, out: Path, *extra: str) -> int:
    return main(["lora", "convert", "--in", str(peft_dir), "--out", str(out), *extra])


def _engine_logits(model, engine_dir: Path, converted_dir: Path, ids) -> torch.Tensor:
    """Logits of `model` with the CPU engine's LoRA code fed the converted files."""
    from cpu_runtime.engine import lora

    engine = lora.EngineLora.from_engine(json.loads((engine_dir / "config.json").read_text()), model)
    weights = np.load(converted_dir / WEIGHTS_FILE)
    config = np.load(converted_dir / CONFIG_FILE)
    adapter = lora.decode_adapter(7, weights, config, engine)
    hooks = lora.LoraHooks(model)
    try:
        with torch.inference_mode(), hooks.use(adapter):
            return model(input_ids=torch.tensor(ids)).logits[0]
    finally:
        hooks.remove()


def _peft_adapter(folder: Path, rank: int, alpha: int, rslora: bool, seed: int):
    """A peft LoRA on every linear of the tiny Llama, random A and B; returns (peft model, folder)."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(tiny_llama(), LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(ALL_MODULES),
                                                    use_rslora=rslora, lora_dropout=0.0))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.2)
    model.save_pretrained(folder)
    return model.eval()


@pytest.mark.parametrize("rslora", [False, True])
def test_converted_adapter_matches_peft_logits(tmp_path, rslora):
    peft_model = _peft_adapter(tmp_path / "peft", rank=4, alpha=8, rslora=rslora, seed=1)
    engine = write_engine_config(tmp_path / "engine", shape=TINY, max_rank=8)
    assert _convert_cli(tmp_path / "peft", tmp_path / "out", "--engine-dir", str(engine)) == 0
    with torch.inference_mode():
        expected = peft_model(input_ids=torch.tensor(PROMPT_IDS)).logits[0]
        base = tiny_llama()(input_ids=torch.tensor(PROMPT_IDS)).logits[0]
    got = _engine_logits(tiny_llama(), engine, tmp_path / "out", PROMPT_IDS)
    effect = (expected - base).abs().max().item()
    error = (got - expected).abs().max().item()
    assert effect > 0.5, "the adapter should change the logits clearly"
    assert error < 0.01 * effect + 1e-3, f"engine vs peft differ by {error} (adapter effect {effect})"


def test_demo_adapter_matches_peft_on_smollm2(tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from setup.cpu.engine import engine_dir
    from setup.cpu.model import prepare_cpu_model

    adapter_dir = DEMO_ADAPTERS / "pirate"
    assert (adapter_dir / "adapter_config.json").is_file(), "run scripts/train_demo_adapters.py"
    model_dir = prepare_cpu_model(log=lambda *_: None)
    engine = write_engine_config(tmp_path / "engine") if not (engine_dir() / "config.json").is_file() else engine_dir()
    assert _convert_cli(adapter_dir, tmp_path / "out", "--engine-dir", str(engine)) == 0
    ids = [[1, 9690, 198, 4093, 314, 253, 5356, 30, 2, 198, 1, 4093, 198]]
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), adapter_dir).eval()
    with torch.inference_mode():
        expected = peft_model(input_ids=torch.tensor(ids)).logits[0]
    got = _engine_logits(AutoModelForCausalLM.from_pretrained(model_dir).eval(), engine, tmp_path / "out", ids)
    assert (got - expected).abs().max().item() < 0.05
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


def test_layout_scaling_and_module_ids(tmp_path):
    folder = write_peft(tmp_path / "a", rank=4, alpha=8, modules=("q_proj", "k_proj", "up_proj", "gate_proj"),
                        layers=(1, 0), shape=TINY)
    converted = convert_peft(folder, "float32")
    assert converted.weights.shape == (1, 8, 4 * 48 + 80 * 4) and converted.weights.dtype == np.float32
    assert converted.config.dtype == np.int32
    assert converted.config[0].tolist() == [[1, 0, 4], [2, 0, 4], [5, 0, 4], [7, 0, 4],
                                            [1, 1, 4], [2, 1, 4], [5, 1, 4], [7, 1, 4]]
    from safetensors.numpy import load_file

    raw = load_file(str(folder / "adapter_model.safetensors"))
    a = raw["base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"]
    b = raw["base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight"]
    row = converted.weights[0, 1]
    np.testing.assert_allclose(row[: 4 * 48], a.reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(row[4 * 48: 4 * 48 + 32 * 4], (b * 2).reshape(-1), rtol=1e-6)
    assert not row[4 * 48 + 32 * 4:].any(), "short rows are zero-padded"


def test_rslora_scaling_and_gate_up_swap(tmp_path):
    folder = write_peft(tmp_path / "a", rank=4, alpha=8, modules=("gate_up_proj",), layers=(0,),
                        config_extra={"use_rslora": True}, dims={"gate_up_proj": (48, 160)})
    converted = convert_peft(folder, "float32")
    from safetensors.numpy import load_file

    b = load_file(str(folder / "adapter_model.safetensors"))["base_model.model.model.layers.0.mlp.gate_up_proj.lora_B.weight"]
    stored_b = converted.weights[0, 0, 4 * 48:].reshape(160, 4)
    scale = 8 / math.sqrt(4)
    np.testing.assert_allclose(stored_b[:80], b[80:] * scale, rtol=1e-6)
    np.testing.assert_allclose(stored_b[80:], b[:80] * scale, rtol=1e-6)
    assert converted.config[0, 0].tolist() == [5, 0, 4]


def test_bin_file_gives_the_same_tensors(tmp_path):
    a = convert_peft(write_peft(tmp_path / "st", seed=3), "float16")
    b = convert_peft(write_peft(tmp_path / "bin", seed=3, fmt="bin"), "float16")
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.config, b.config)


def test_bfloat16_is_stored_as_upstream_v2_values(tmp_path):
    """tensorrt_llm/_utils.py (NVIDIA/TensorRT-LLM ed53795b): np_bfloat16 = np.dtype('V2'), the int16 view."""
    converted = convert_peft(write_peft(tmp_path / "a"), "bfloat16")
    assert converted.weights.dtype == np.dtype("V2")
    as_float = convert_peft(tmp_path / "a", "float32").weights
    expected = torch.from_numpy(as_float).to(torch.bfloat16).view(torch.int16).numpy()
    assert np.array_equal(converted.weights.view(np.int16), expected)
    np.testing.assert_allclose(from_storage(converted.weights), as_float, rtol=1 / 128, atol=1e-30)
    assert to_storage(np.array([1.0], dtype=np.float32), "bfloat16").view("<u2").tolist() == [0x3F80]
    save_converted(converted, tmp_path / "out")
    loaded = load_converted(tmp_path / "out")
    assert loaded.dtype == "bfloat16" and np.array_equal(loaded.weights.view("<u2"), converted.weights.view("<u2"))


def test_uint16_bfloat16_files_of_earlier_versions_still_load(tmp_path):
    converted = convert_peft(write_peft(tmp_path / "a"), "bfloat16")
    (tmp_path / "old").mkdir()
    np.save(tmp_path / "old" / WEIGHTS_FILE, converted.weights.view(np.uint16))
    np.save(tmp_path / "old" / CONFIG_FILE, converted.config)
    loaded = load_converted(tmp_path / "old")
    assert loaded.dtype == "bfloat16"
    np.testing.assert_array_equal(from_storage(loaded.weights), from_storage(converted.weights))


def test_four_column_configs_of_later_upstream_are_read(tmp_path):
    """Later hf_lora_convert.py (NVIDIA/TensorRT-LLM 5573a380) writes [module_id, layer, rank, is_dora]."""
    converted = convert_peft(write_peft(tmp_path / "a"), "float16", columns=4)
    assert converted.config.shape[2] == 4 and not converted.config[0, :, 3].any()
    save_converted(converted, tmp_path / "out")
    loaded = load_converted(tmp_path / "out")
    assert loaded.config.shape[2] == 3
    np.testing.assert_array_equal(loaded.config, converted.config[:, :, :3])
    dora = converted.config.copy()
    dora[0, 0, 3] = 1
    np.save(tmp_path / "out" / CONFIG_FILE, dora)
    with pytest.raises(LoraConvertError, match="DoRA rows"):
        load_converted(tmp_path / "out")
    dora[0, 0, 3] = 2
    np.save(tmp_path / "out" / CONFIG_FILE, dora)
    with pytest.raises(LoraConvertError, match="must be 0 or 1"):
        load_converted(tmp_path / "out")


def test_written_width_is_what_each_release_reads():
    """Each era's lora_config_columns equals the lora_config dims of the backend config it was checked against."""
    import yaml

    from setup.catalog.builds import eras
    from setup.repo.releases import release_tensor_sets

    upstream = Path(__file__).parents[3] / "data" / "upstream"
    for era in eras().values():
        tag = release_tensor_sets()[era.tensors]["checked_against"]
        facts = yaml.safe_load((upstream / tag / "inflight_batcher_llm.yaml").read_text())
        dims = next(t["dims"] for t in facts["models"]["tensorrt_llm"]["inputs"] if t["name"] == "lora_config")
        assert dims == [-1, era.lora_config_columns], (era.key, tag)
        assert build_tensors([_row()], "float16", era.lora_config_columns).config.shape[2] == dims[1]


def _row():
    from setup.lora.convert import LoraRow

    return LoraRow(module="q_proj", layer=0, a=np.ones((2, 4), np.float32), b=np.ones((4, 2), np.float32))


def _write_tensors(folder: Path, tensors: dict, **config) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 2, **config}))
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    return folder


def test_moe_modules_get_upstream_ids(tmp_path):
    """w1/w2/w3/gate -> moe_h_to_4h/moe_4h_to_h/moe_gate/moe_router, ids 13-16 (hf_lora_convert.py 5573a380)."""
    rng = np.random.default_rng(0)
    tensors = {}
    for module, (n_in, n_out) in {"w1": (8, 16), "w2": (16, 8), "w3": (8, 16), "gate": (8, 4)}.items():
        prefix = f"base_model.model.model.layers.0.block_sparse_moe.{module}"
        tensors[f"{prefix}.lora_A.weight"] = rng.normal(size=(2, n_in)).astype(np.float32)
        tensors[f"{prefix}.lora_B.weight"] = rng.normal(size=(n_out, 2)).astype(np.float32)
    converted = convert_peft(_write_tensors(tmp_path / "moe", tensors), "float32")
    assert converted.config[0].tolist() == [[13, 0, 2], [14, 0, 2], [15, 0, 2], [16, 0, 2]]
    assert converted.hf_modules == ("w1", "w2", "w3", "gate")


def test_per_expert_weights_and_dora_are_refused_with_a_reason(tmp_path):
    a, b = np.ones((2, 8), np.float32), np.ones((8, 2), np.float32)
    expert = "base_model.model.model.layers.0.block_sparse_moe.experts.3.w1"
    folder = _write_tensors(tmp_path / "experts", {f"{expert}.lora_A.weight": a, f"{expert}.lora_B.weight": b})
    with pytest.raises(LoraConvertError, match="per-expert MoE LoRA weights"):
        convert_peft(folder)
    q = "base_model.model.model.layers.0.self_attn.q_proj"
    folder = _write_tensors(tmp_path / "dora", {f"{q}.lora_A.weight": a, f"{q}.lora_B.weight": b,
                                                f"{q}.lora_magnitude_vector": np.ones(8, np.float32)})
    with pytest.raises(LoraConvertError, match="DoRA magnitude vectors"):
        convert_peft(folder)
    folder = _write_tensors(tmp_path / "dora_cfg", {f"{q}.lora_A.weight": a, f"{q}.lora_B.weight": b}, use_dora=True)
    with pytest.raises(LoraConvertError, match="normalised against the base model"):
        convert_peft(folder)


def test_cli_writes_both_files_atomically_and_loads_back(tmp_path, capsys):
    write_peft(tmp_path / "a")
    assert _convert_cli(tmp_path / "a", tmp_path / "out") == 0
    assert "rank 4" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([WEIGHTS_FILE, CONFIG_FILE])
    loaded = load_converted(tmp_path / "out")
    assert loaded.weights.dtype == np.float16 and loaded.weights.shape[:2] == (1, 4)
    assert loaded.hf_modules == ("q_proj", "v_proj") and loaded.rank == 4


def test_default_dtype_follows_the_engine(tmp_path):
    write_peft(tmp_path / "a")
    engine = write_engine_config(tmp_path / "engine", dtype="float32")
    assert _convert_cli(tmp_path / "a", tmp_path / "out", "--engine-dir", str(engine)) == 0
    assert np.load(tmp_path / "out" / WEIGHTS_FILE).dtype == np.float32


# ---- validation: each problem gets its own message (CLI: one line `error: ...`, exit 2) ----------------
def _engine(tmp_path, **kwargs) -> Path:
    return write_engine_config(tmp_path / "engine", **kwargs)


CASES = {
    "rank above max_lora_rank": (
        lambda t: (write_peft(t / "a", rank=16), _engine(t, max_rank=8)),
        "rank 16 is above the engine's max_lora_rank 8"),
    "module not built into the engine": (
        lambda t: (write_peft(t / "a", modules=("q_proj", "down_proj")), _engine(t, modules=("attn_q",))),
        "targets down_proj (mlp_4h_to_h), which the engine was not built for"),
    "engine without LoRA": (
        lambda t: (write_peft(t / "a"), _engine(t, modules=(), max_rank=0)),
        "built without LoRA support"),
    "layer beyond the model": (
        lambda t: (write_peft(t / "a", layers=(0, 30)), _engine(t)),
        "weights for layer 30 but the engine's model has 30 layers"),
    "other hidden size": (
        lambda t: (write_peft(t / "a", shape={**TINY, "layers": 2}), _engine(t)),
        "maps 48 -> 64 features but the engine's attn_q maps 576 -> 576"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_engine_mismatch_messages(tmp_path, capsys, case):
    make, expected = CASES[case]
    peft_dir, engine = make(tmp_path)
    assert _convert_cli(peft_dir, tmp_path / "out", "--engine-dir", str(engine)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "out").exists(), "nothing is written for a refused adapter"


def test_dtype_mismatch_message(tmp_path, capsys):
    write_peft(tmp_path / "a")
    engine = _engine(tmp_path)
    assert _convert_cli(tmp_path / "a", tmp_path / "out", "--dtype", "bfloat16", "--engine-dir", str(engine)) == 2
    assert "stored as bfloat16 but the engine's dtype is float16" in capsys.readouterr().err


def _evil_bin(folder: Path) -> None:
    class Payload:
        def __reduce__(self):
            return (print, ("unpickled!",))

    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4, "lora_alpha": 8}))
    (folder / "adapter_model.bin").write_bytes(pickle.dumps({"x": Payload()}))


def _write(folder: Path, files: dict) -> None:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)


FILE_CASES = {
    "missing folder": (lambda f: None, "does not exist"),
    "no adapter_config.json": (lambda f: _write(f, {"adapter_model.safetensors": "x"}), "has no adapter_config.json"),
    "bad json": (lambda f: _write(f, {"adapter_config.json": "{nope"}), "adapter_config.json is not valid JSON"),
    "not lora": (lambda f: _write(f, {"adapter_config.json": '{"peft_type": "PREFIX_TUNING", "r": 4}'}),
                 "describes a PREFIX_TUNING adapter"),
    "bad r": (lambda f: _write(f, {"adapter_config.json": '{"r": 0, "lora_alpha": 8}'}), "'r' must be a positive number"),
    "dora": (lambda f: _write(f, {"adapter_config.json": '{"r": 4, "lora_alpha": 8, "use_dora": true}'}), "DoRA"),
    "no weights": (lambda f: _write(f, {"adapter_config.json": '{"r": 4, "lora_alpha": 8}'}),
                   "has neither adapter_model.safetensors nor adapter_model.bin"),
    "corrupt safetensors": (lambda f: _write(f, {"adapter_config.json": '{"r": 4, "lora_alpha": 8}',
                                                 "adapter_model.safetensors": "garbage"}), "could not be read"),
    "pickled objects in .bin": (_evil_bin, "could not be loaded as plain tensors (weights_only)"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_missing_or_malformed_files(tmp_path, capsys, case):
    make, expected = FILE_CASES[case]
    make(tmp_path / "a")
    assert _convert_cli(tmp_path / "a", tmp_path / "out") == 2
    out = capsys.readouterr()
    assert expected in out.err and out.err.startswith("error: ") and "unpickled!" not in out.out, out.err


def test_weight_problems(tmp_path):
    from safetensors.numpy import save_file

    folder = write_peft(tmp_path / "unknown", modules=("q_proj",), layers=(0,))
    save_file({"base_model.model.model.layers.0.mlp.fc1.lora_A.weight": np.zeros((4, 8), np.float32),
               "base_model.model.model.layers.0.mlp.fc1.lora_B.weight": np.zeros((8, 4), np.float32)},
              str(folder / "adapter_model.safetensors"))
    with pytest.raises(LoraConvertError, match="fc1 have no TensorRT-LLM LoRA module id"):
        convert_peft(folder)
    half = write_peft(tmp_path / "half", modules=("q_proj",), layers=(0,))
    save_file({"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": np.zeros((4, 8), np.float32)},
              str(half / "adapter_model.safetensors"))
    with pytest.raises(LoraConvertError, match="layer 0 q_proj has no lora_B"):
        convert_peft(half)
    empty = write_peft(tmp_path / "empty")
    save_file({"something.else": np.zeros(3, np.float32)}, str(empty / "adapter_model.safetensors"))
    with pytest.raises(LoraConvertError, match="no weights named like"):
        convert_peft(empty)
    with pytest.raises(LoraConvertError, match="says r=8"):
        convert_peft(write_peft(tmp_path / "rank", rank=4, config_extra={"r": 8}))


def test_converted_pair_checked_against_engine(tmp_path):
    converted = convert_peft(write_peft(tmp_path / "a", shape=TINY, layers=(0,)), "float16")
    from setup.lora.convert import save_converted

    save_converted(converted, tmp_path / "pair")
    pair = load_converted(tmp_path / "pair")
    check_against_engine(pair, load_engine_spec(write_engine_config(tmp_path / "tiny", shape=TINY)))
    with pytest.raises(LoraConvertError, match="needs 4608 values but rows hold 448"):
        check_against_engine(pair, load_engine_spec(write_engine_config(tmp_path / "smol")))
    (tmp_path / "pair" / CONFIG_FILE).write_bytes(b"not npy")
    with pytest.raises(LoraConvertError, match="is not a readable .npy array"):
        load_converted(tmp_path / "pair")


def test_engine_config_problems(tmp_path):
    with pytest.raises(LoraConvertError, match="has no config.json"):
        load_engine_spec(tmp_path)
    (tmp_path / "config.json").write_text('{"pretrained_config": {}}')
    with pytest.raises(LoraConvertError, match="is not an engine config"):
        load_engine_spec(tmp_path)
