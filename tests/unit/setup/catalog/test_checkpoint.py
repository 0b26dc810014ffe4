"""setup/catalog/checkpoint.py on real files in tmp_path: config.json facts (top level or nested language
config), folder sizes, and the adapters a LoRA folder holds with the problems found on the way."""

from __future__ import annotations

import json

import pytest

from setup.catalog.checkpoint import Adapter, head_count, hidden_size, read_config, scan_adapters, tree_size


def test_read_config(tmp_path):
    assert read_config(tmp_path) is None  # no config.json
    (tmp_path / "config.json").write_text("{broken")
    assert read_config(tmp_path) is None
    (tmp_path / "config.json").write_text("[1]")
    assert read_config(tmp_path) is None
    (tmp_path / "config.json").write_text('{"hidden_size": 64}')
    assert read_config(tmp_path) == {"hidden_size": 64}


@pytest.mark.parametrize("config, heads, hidden", [
    ({"num_attention_heads": 32, "hidden_size": 4096}, 32, 4096),
    ({"n_head": 12, "n_embd": 768}, 12, 768),  # GPT-2 names
    ({"num_heads": 16, "d_model": 1024}, 16, 1024),
    ({"text_config": {"num_attention_heads": 40, "hidden_size": 5120}, "vision_config": {"num_attention_heads": 16}},
     40, 5120),
    ({"llm_config": {"num_attention_heads": 8}}, 8, None),
    ({"num_attention_heads": 8, "text_config": {"num_attention_heads": 99}}, 8, None),  # the top level first
    ({"num_attention_heads": "32", "text_config": "none"}, None, None),  # not whole numbers, not a mapping
    ({}, None, None),
    (None, None, None),
])
def test_head_count_and_hidden_size(config, heads, hidden):
    assert head_count(config) == heads and hidden_size(config) == hidden


def test_tree_size(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"1234")
    (tmp_path / "a" / "b" / "y.bin").write_bytes(b"123456")
    assert tree_size(tmp_path / "a") == 10
    assert tree_size(tmp_path / "a" / "x.bin") == 4
    assert tree_size(tmp_path / "absent") == 0


def adapter(folder, config, weights: dict[str, bytes] | None = None):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for name, data in (weights or {}).items():
        (folder / name).write_bytes(data)
    return folder


def test_a_folder_of_adapters_is_scanned_in_name_order(tmp_path):
    adapter(tmp_path / "pirate", {"r": 8, "target_modules": ["q_proj", "v_proj", "lm_head"]},
            {"adapter_model.safetensors": b"x" * 100})
    adapter(tmp_path / "chef", {"r": 4, "target_modules": r".*\.(q_proj|v_proj)"}, {"adapter_model.bin": b"x" * 7})
    (tmp_path / "notes").mkdir()  # no adapter_config.json: not an adapter, not a problem
    adapters, problems = scan_adapters(tmp_path)
    assert problems == []
    assert [(a.name, a.rank, a.target_modules, a.weight_bytes) for a in adapters] == [
        ("chef", 4, ("q_proj", "v_proj"), 7), ("pirate", 8, ("q_proj", "v_proj", "lm_head"), 100)]
    assert adapters[1].trt_modules == ("attn_q", "attn_v")  # lm_head has no TensorRT-LLM LoRA module


def test_a_folder_that_is_itself_an_adapter(tmp_path):
    folder = adapter(tmp_path / "solo", {"r": 16})
    adapter(folder / "nested", {"r": 2})  # the folder itself wins: subfolders are not scanned
    adapters, problems = scan_adapters(folder)
    assert [(a.name, a.rank, a.target_modules, a.weight_bytes) for a in adapters] == [("solo", 16, (), 0)]
    assert problems == []


@pytest.mark.parametrize("config", ["{broken", '{"target_modules": ["q_proj"]}', '{"r": "eight"}', '{"r": null}',
                                    '{"r": "4"}', '{"r": 8.7}', '{"r": 0}', '{"r": -2}', '{"r": true}',
                                    '{"r": 4, "target_modules": "(q_proj"}'])
def test_bad_adapter_configs_are_problems_not_adapters(tmp_path, config):
    adapter(tmp_path / "bad", config)
    adapter(tmp_path / "good", {"r": 4})
    adapters, problems = scan_adapters(tmp_path)
    assert [a.name for a in adapters] == ["good"]
    assert len(problems) == 1 and problems[0].startswith(f"Adapter {tmp_path / 'bad'}: adapter_config.json is not")


def test_a_folder_without_adapters_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    assert scan_adapters(tmp_path) == ([], [f"LoRA folder {tmp_path} holds no adapter (no adapter_config.json in "
                                            "it or its subfolders)."])


def test_a_target_modules_pattern_matches_as_peft_matches_it(tmp_path):
    adapter(tmp_path / "a", {"r": 4, "target_modules": "q_proj"})  # a pattern naming modules directly
    adapter(tmp_path / "b", {"r": 4, "target_modules": r".*\.(q|v)_proj"})  # PEFT's usual form: whole paths
    adapter(tmp_path / "c", {"r": 4, "target_modules": r"model\.layers\.\d+\.mlp\.(gate|up)_proj"})
    adapters, problems = scan_adapters(tmp_path)
    assert problems == []
    assert [a.trt_modules for a in adapters] == [("attn_q",), ("attn_q", "attn_v"), ("mlp_gate", "mlp_h_to_4h")]


def test_trt_modules_are_sorted_and_unique():
    one = Adapter("a", None, 8, ("v_proj", "q_proj", "query_key_value", "qkv_proj"), 0)
    assert one.trt_modules == ("attn_q", "attn_qkv", "attn_v")
