"""cpu_runtime/engine/checkpoint.py: the Llama checkpoint built with torch alone holds transformers' weights under
transformers' names, its norm and rotary embedding give the same bits, and other folders are left to transformers."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from cpu_runtime.engine.checkpoint import LlamaCheckpoint, light_config, load_light, load_model
from setup.cpu.model import prepare_cpu_model
from tests.cpu_engine_helpers import load_hf_model


@pytest.fixture(scope="module")
def folders():
    folder = prepare_cpu_model(log=lambda *_: None)
    return folder, load_light(folder), load_hf_model()


def test_every_weight_is_transformers_own_under_its_name(folders):
    _, ours, theirs = folders
    mine, reference = ours.state_dict(), theirs.state_dict()
    assert mine.keys() == reference.keys()
    assert all(torch.equal(mine[name], reference[name]) for name in reference)
    assert ours.lm_head.weight.data_ptr() == ours.model.embed_tokens.weight.data_ptr()  # tied, as in config.json
    assert ours.config.hidden_size == theirs.config.hidden_size and ours.get_input_embeddings().weight.shape[0] == 49152


def test_norm_and_rotary_embedding_give_the_same_bits(folders):
    _, ours, theirs = folders
    hidden = torch.randn(5, ours.config.hidden_size, generator=torch.Generator().manual_seed(3))
    positions = torch.tensor([[0, 1, 2, 700, 3071]])
    with torch.inference_mode():
        assert torch.equal(ours.model.norm(hidden), theirs.model.norm(hidden))
        assert torch.equal(ours.model.layers[4].input_layernorm(hidden), theirs.model.layers[4].input_layernorm(hidden))
        for mine, reference in zip(ours.model.rotary_emb(hidden, positions), theirs.model.rotary_emb(hidden, positions),
                                   strict=True):
            assert torch.equal(mine, reference)


@pytest.mark.parametrize("change", [{"architectures": ["MistralForCausalLM"]},
                                    {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e5}},
                                    {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}])
def test_other_architectures_and_scaled_rope_are_left_to_transformers(folders, tmp_path, change):
    folder = folders[0]
    config = {**json.loads((folder / "config.json").read_text()), **change}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").symlink_to(folder / "model.safetensors")
    assert light_config(tmp_path) is None and load_light(tmp_path) is None


def test_the_engine_loads_the_demo_folder_light_and_a_scaled_rope_folder_with_transformers(folders, tmp_path):
    folder = folders[0]
    assert isinstance(load_model(folder), LlamaCheckpoint)
    config = {**json.loads((folder / "config.json").read_text()), "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").symlink_to(folder / "model.safetensors")
    scaled = load_model(tmp_path)
    assert type(scaled).__name__ == "LlamaForCausalLM" and not scaled.training


def test_a_folder_without_safetensors_is_left_to_transformers(folders, tmp_path):
    shutil.copy(folders[0] / "config.json", tmp_path / "config.json")
    assert light_config(tmp_path) is not None and load_light(tmp_path) is None


def test_loading_does_not_import_torch_dynamo(folders):
    """Building the module tree on meta tensors must not run torch's Python reference kernels (an Embedding's random
    init did): their first use imports torch._dynamo, 2.7 of an engine start's 3.5 CPU s. A fresh process shows it."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from cpu_runtime.engine.checkpoint import load_light; "
            f"assert load_light(Path({str(folders[0])!r})) is not None; print('torch._dynamo' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_the_tokenizer_is_autotokenizers_without_the_model_config(folders):
    from transformers import AutoTokenizer

    from cpu_runtime.engine.checkpoint import load_tokenizer

    ours, theirs = load_tokenizer(folders[0]), AutoTokenizer.from_pretrained(folders[0])
    assert type(ours) is type(theirs) and len(ours) == len(theirs)
    chat = [{"role": "user", "content": "<image>\nWhat is in the picture?"}]
    assert ours.apply_chat_template(chat, tokenize=False) == theirs.apply_chat_template(chat, tokenize=False)
    assert ours.encode("A café in 東京 🙂") == theirs.encode("A café in 東京 🙂")


@pytest.mark.parametrize("settings", [{"tokenizer_class": "LlamaTokenizerFast"},
                                      {"auto_map": {"AutoTokenizer": ["tok.Mine", None]}}], ids=["class", "auto_map"])
def test_other_tokenizers_go_through_autotokenizer(folders, tmp_path, monkeypatch, settings):
    import transformers

    from cpu_runtime.engine.checkpoint import load_tokenizer

    config = json.loads((folders[0] / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, **settings}))
    asked = []
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda folder, **_: asked.append(folder) or "auto")
    assert load_tokenizer(tmp_path) == "auto" and asked == [str(tmp_path)]
