"""trtllm-serve deployment kind: options YAML keys per release, refusals, honest notes, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from setup.paths import PROJECT_ROOT
from setup.plan.serve import OPTIONS_FILE, SCRIPT_FILE, ServeConfig, make_serve_plan, write_serve_files
from setup.plan.serve_catalog import NESTED, releases, resolve_release, served_families
from setup.plan.types import PlanError


def _used_keys(options: dict) -> list[tuple[str, str | None]]:
    keys = []
    for key, value in options.items():
        keys.append((key, None))
        if key in NESTED:
            keys += [(key, inner) for inner in value]
    return keys


@pytest.fixture()
def folders(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for name, rank in (("pirate", 8), ("french", 16)):
        adapter = tmp_path / "adapters" / name
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text(json.dumps({"r": rank, "target_modules": ["q_proj", "v_proj"]}))
    return tmp_path


def test_every_release_records_its_source_and_names():
    assert {"1.0", "1.1", "1.2"} <= set(releases())
    for rel in releases().values():
        assert rel.source["repo"] == "NVIDIA/TensorRT-LLM" and rel.source["tag"] == f"v{rel.release}.0"
        assert rel.source["path"] == "tensorrt_llm/llmapi/llm_args.py"
        assert {"tensor_parallel_size", "max_num_tokens", "kv_cache_config", "lora_config"} <= rel.top_level
        assert {"lora_dir", "max_lora_rank", "max_loras", "max_cpu_loras", "lora_target_modules"} <= \
            rel.nested["lora_config"]
        assert {"free_gpu_memory_fraction", "enable_block_reuse"} <= rel.nested["kv_cache_config"]
    assert resolve_release("1.2.1").release == "1.2" and resolve_release("v1.0.0").release == "1.0"
    with pytest.raises(ValueError, match="1.0, 1.1, 1.2"):
        resolve_release("0.19")


@pytest.mark.parametrize("version", ["1.0", "1.2"])
@pytest.mark.parametrize("family", ["llama", "qwen2-vl"])
def test_yaml_uses_only_recorded_keys(folders, family, version):
    lora = str(folders / "adapters") if family == "llama" else None
    plan = make_serve_plan(ServeConfig(family=family, checkpoint=str(folders / "ckpt"), trtllm_version=version,
                                       out=str(folders / "out"), tp=2, max_batch_size=8, max_num_tokens=4096,
                                       max_seq_len=4096, kv_cache_fraction=0.85, lora_dir=lora))
    rel = releases()[version]
    options = yaml.safe_load(plan.options_yaml())
    assert options == plan.options
    for key, inner in _used_keys(options):
        assert key in rel.top_level
        assert inner is None or inner in rel.nested[key]
    assert options["tensor_parallel_size"] == 2 and options["kv_cache_config"]["free_gpu_memory_fraction"] == 0.85
    if family == "llama":
        assert options["lora_config"]["max_lora_rank"] == 16 and len(options["lora_config"]["lora_dir"]) == 2
        assert options["lora_config"]["lora_target_modules"] == ["attn_q", "attn_v"]
    else:
        assert options["kv_cache_config"]["enable_block_reuse"] is False and "lora_config" not in options
    assert plan.argv[:4] == ["trtllm-serve", str((folders / "ckpt").resolve()), "--backend", "pytorch"]
    assert all(a in rel.serve_flags for a in plan.argv if a.startswith("--"))


def test_unknown_key_is_refused_naming_key_and_release(folders):
    config = ServeConfig(family="llama", checkpoint=str(folders / "ckpt"), trtllm_version="1.1",
                         out=str(folders / "out"), options={"max_tokens_in_paged_kv_cache": 10,
                                                            "kv_cache_config.bogus": 1})
    with pytest.raises(PlanError) as err:
        make_serve_plan(config)
    assert err.value.problems == [
        "'max_tokens_in_paged_kv_cache' is not an LLM API argument of TensorRT-LLM 1.1 (recorded from "
        "NVIDIA/TensorRT-LLM v1.1.0, setup/data/llm_api/1.1.yaml).",
        "'kv_cache_config.bogus' is not an LLM API argument of TensorRT-LLM 1.1 (recorded from "
        "NVIDIA/TensorRT-LLM v1.1.0, setup/data/llm_api/1.1.yaml)."]


def test_llava_15_gets_the_honest_note(folders):
    with pytest.raises(PlanError) as err:
        make_serve_plan(ServeConfig(family="llava-1.5", checkpoint=str(folders / "ckpt"), trtllm_version="1.2",
                                    out=str(folders / "out")))
    (problem,) = err.value.problems
    assert "LLaVA-1.5 cannot be deployed with trtllm-serve on TensorRT-LLM 1.2" in problem
    assert "not in the PyTorch backend's support matrix" in problem and "engine path" in problem
    assert served_families()["llava-next"].served_at("1.0")


def test_lora_refused_for_family_without_it_and_problems_collected(folders):
    with pytest.raises(PlanError) as err:
        make_serve_plan(ServeConfig(family="qwen2-vl", checkpoint=str(folders / "missing"), trtllm_version="1.0",
                                    out="", kv_cache_fraction=1.5, lora_dir=str(folders / "adapters")))
    text = "\n".join(err.value.problems)
    assert "no LoRA support" in text and "does not exist" in text and "at most 1" in text and "Give the output folder" in text


def test_files_written_whole(folders):
    plan = make_serve_plan(ServeConfig(family="llama", checkpoint=str(folders / "ckpt"), trtllm_version="1.2",
                                       out=str(folders / "out")))
    options, script = write_serve_files(plan)
    assert options.name == OPTIONS_FILE and script.name == SCRIPT_FILE
    assert yaml.safe_load(options.read_text()) == plan.options
    assert script.stat().st_mode & 0o111 and "trtllm-serve" in script.read_text()
    assert sorted(p.name for p in options.parent.iterdir()) == [OPTIONS_FILE, SCRIPT_FILE]  # no temp files left


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "setup", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120)


def test_cli_plan_prints_command_and_yaml(folders):
    result = _cli("plan", "--deployment", "trtllm-serve", "--family", "llama", "--checkpoint", str(folders / "ckpt"),
                  "--trtllm-version", "1.2", "--tp", "2", "--max-batch-size", "8", "--max-num-tokens", "2048",
                  "--max-seq-len", "4096", "--kv-cache-fraction", "0.8", "--lora-dir", str(folders / "adapters"),
                  "--max-lora-rank", "32", "--out", str(folders / "out"))
    assert result.returncode == 0, result.stderr
    assert "trtllm-serve " in result.stdout and "--extra_llm_api_options" in result.stdout
    body = result.stdout.split(f"{OPTIONS_FILE} ---\n", 1)[1]
    options = yaml.safe_load(body)
    assert options["lora_config"]["max_lora_rank"] == 32 and options["max_num_tokens"] == 2048
    assert not (folders / "out").exists()  # plan writes nothing


def test_cli_unknown_option_and_build_without_trtllm_serve(folders):
    bad = _cli("plan", "--deployment", "trtllm-serve", "--family", "llama", "--checkpoint", str(folders / "ckpt"),
               "--trtllm-version", "1.0", "--out", str(folders / "out"), "--option", "no_such_arg=1")
    assert bad.returncode == 2 and "error: 'no_such_arg' is not an LLM API argument of TensorRT-LLM 1.0" in bad.stderr
    built = _cli("build", "--deployment", "trtllm-serve", "--family", "qwen2-vl", "--checkpoint",
                 str(folders / "ckpt"), "--trtllm-version", "1.0", "--out", str(folders / "out"))
    assert built.returncode == 0, built.stderr
    assert "trtllm-serve is not installed on this machine" in built.stdout
    assert (folders / "out" / OPTIONS_FILE).is_file()
