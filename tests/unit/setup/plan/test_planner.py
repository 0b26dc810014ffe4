"""Planner: argv lists against the documented flags per TensorRT-LLM version, derived values, validation, CLI.

TensorRT-LLM cannot be installed here (no GPU): the GPU-only commands are checked by comparing their
argument lists with the documented flags of each tool and version (tests/build_standins.py), not by
running the real tools.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from setup.catalog import messages as M
from setup.paths import PROJECT_ROOT
from setup.plan.config import ConfigError, PlanConfig
from setup.plan.planner import PlanError, make_plan
from tests.build_standins import (
    CONVERT,
    LORA_CONVERT,
    TRTLLM_BUILD_011,
    TRTLLM_BUILD_019,
    VISUAL,
    make_adapter,
    make_checkpoint,
)

ROOT = PROJECT_ROOT


def flags(argv) -> set[str]:
    return {a for a in argv if a.startswith("-") and not a[1:].isdigit()}


def value(argv, flag: str) -> str:
    return argv[list(argv).index(flag) + 1]


def plan_for(tmp_path, family, version="0.19", **fields):
    ckpt = fields.pop("checkpoint", None) or make_checkpoint(tmp_path / "ckpt")
    return make_plan(PlanConfig(family=family, checkpoint=str(ckpt), out=str(tmp_path / "out"),
                                trtllm_version=version, trtllm_root="/opt/trtllm", **fields))


def step(plan, step_id):
    return next(s for s in plan.steps if s.id == step_id)


def problems(tmp_path, **fields) -> list[str]:
    fields.setdefault("out", str(tmp_path / "out"))
    with pytest.raises(PlanError) as info:
        make_plan(PlanConfig(**fields))
    return info.value.problems


def check_documented(plan):
    """Every flag of every GPU-tool step is a documented flag of that tool in the plan's era."""
    build_flags = TRTLLM_BUILD_011 if plan.version.era.key == "0.11" else TRTLLM_BUILD_019
    for s in plan.steps:
        if s.phase == "convert":
            assert flags(s.argv[2:]) <= CONVERT, s.argv
        elif s.phase == "build":
            assert flags(s.argv) <= build_flags, flags(s.argv) - build_flags
        elif s.phase == "visual":
            assert flags(s.argv[2:]) <= VISUAL
        elif s.phase == "lora":
            assert flags(s.argv[2:]) <= LORA_CONVERT


# ----- plans of the issue ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.11", "0.15", "0.19"])
def test_llama_tp2(tmp_path, version):
    plan = plan_for(tmp_path, "llama", version, tp=2)
    check_documented(plan)
    convert, build = step(plan, "convert"), step(plan, "build-llm")
    assert value(convert.argv, "--tp_size") == "2" and "--pp_size" not in convert.argv  # 1 is the default
    assert convert.argv[1].endswith("examples/llama/convert_checkpoint.py")  # flat up to 0.19
    assert build.outputs[-2:] == (str(tmp_path / "out/engines/llm/rank0.engine"),
                                  str(tmp_path / "out/engines/llm/rank1.engine"))
    assert plan.derived["world_size"] == 2
    assert value(step(plan, "launch").argv, "--world-size") == "2"
    if version == "0.11":
        assert value(build.argv, "--max_output_len") == "2048" and "--max_seq_len" not in build.argv
    else:
        assert value(build.argv, "--max_seq_len") == "4096" and "--max_output_len" not in build.argv
    assert [s.phase for s in plan.steps] == ["check", "convert", "build", "repository", "launch"]


def test_llava_multimodal_length_8_x_576(tmp_path):
    plan = plan_for(tmp_path, "llava-1.5", "0.19", max_batch_size=8)
    check_documented(plan)
    build = step(plan, "build-llm")
    assert value(build.argv, "--max_multimodal_len") == "4608" == str(plan.derived["max_multimodal_len"])
    assert value(build.argv, "--use_fused_mlp") == "enable"
    visual = step(plan, "visual")
    assert visual.argv[1].endswith("examples/multimodal/build_multimodal_engine.py")
    assert value(visual.argv, "--model_type") == "llava" and value(visual.argv, "--max_batch_size") == "8"
    assert visual.outputs[1].endswith("visual_engine/model.engine")
    repo = step(plan, "repository")
    assert "multimodal_model_path=" + str(tmp_path / "out/visual_engine") in repo.argv
    assert "max_num_images=1" in repo.argv and value(repo.argv, "--template") == "multimodal"
    assert "multimodal_family=llava-1.5" in repo.argv  # the app prepares images by this family entry
    launch = step(plan, "launch")
    assert value(launch.argv, "--engine-models") == "tensorrt_llm,multimodal_encoders"
    assert int(value(launch.argv, "--multimodal-gpu0-cuda-mem-pool-bytes")) >= 2 * 576 * 4096 * 8


def test_llava_older_eras(tmp_path):
    old = plan_for(tmp_path, "llava-1.5", "0.11")
    check_documented(old)
    assert step(old, "visual").argv[1].endswith("examples/multimodal/build_visual_engine.py")
    assert step(old, "visual").outputs[1].endswith("visual_encoder.engine")
    assert value(step(old, "build-llm").argv, "--max_output_len") == "512"
    assert not old.deploy_steps(), "Triton serves LLaVA from backend 0.13 only"
    assert "0.13" in old.triton_note
    mid = plan_for(tmp_path, "llava-1.5", "0.15")
    # our templates name the folder multimodal_model_path in every release (0.15 used to fail after the build)
    assert "multimodal_model_path=" + str(tmp_path / "out/visual_engine") in step(mid, "repository").argv
    assert value(step(mid, "check-repository").argv, "--trtllm-version") == "0.15"


def test_blip2_opt(tmp_path):
    plan = plan_for(tmp_path, "blip2-opt", "1.2")
    check_documented(plan)
    convert = step(plan, "convert")
    assert convert.argv[1].endswith("examples/models/contrib/opt/convert_checkpoint.py")
    assert value(convert.argv, "--model_type") == "blip2"
    build = step(plan, "build-llm")
    assert value(build.argv, "--max_multimodal_len") == "256"  # 8 x 32
    assert value(build.argv, "--max_input_len") == "924" and value(build.argv, "--max_seq_len") == "1024"
    assert value(step(plan, "visual").argv, "--model_type") == "blip2"


def test_blip2_t5_builds_encoder_and_decoder(tmp_path):
    plan = plan_for(tmp_path, "blip2-t5", "0.19")
    check_documented(plan)
    encoder, decoder = step(plan, "build-encoder"), step(plan, "build-decoder")
    assert value(encoder.argv, "--checkpoint_dir").endswith("checkpoint/encoder")
    assert value(encoder.argv, "--max_multimodal_len") == "256"
    assert value(decoder.argv, "--max_input_len") == "1"
    assert value(decoder.argv, "--max_encoder_input_len") == "924"
    assert [s.id for s in plan.deploy_steps()] == ["repository", "launch"]  # the runner topology


@pytest.mark.parametrize("version", ["0.11", "0.12", "0.19"])
def test_cogvlm_bf16_rules(tmp_path, version):
    plan = plan_for(tmp_path, "cogvlm", version)
    check_documented(plan)
    assert plan.derived["dtype"] == "bfloat16"
    convert, build = step(plan, "convert"), step(plan, "build-llm")
    assert "--use_prompt_tuning" in convert.argv and value(convert.argv, "--dtype") == "bfloat16"
    assert value(build.argv, "--max_multimodal_len") == "61440"  # 48 x 1280
    expected = "enable" if version == "0.19" else "disable"
    assert value(build.argv, "--remove_input_padding") == expected
    assert value(build.argv, "--paged_kv_cache") == expected
    # the runner topology; 0.11 has no importable MultimodalModelRunner, so its plan stops after the engines
    served = version != "0.11"
    assert bool(plan.deploy_steps()) == served
    assert ("MultimodalModelRunner" in plan.triton_note) if served else ("from backend 0.12" in plan.triton_note)
    assert any("vicuna" in w for w in plan.warnings)


def test_cogvlm_rejects_float16_and_kv_reuse_without_paged_cache(tmp_path):
    found = problems(tmp_path, family="cogvlm", checkpoint=str(make_checkpoint(tmp_path / "c")), dtype="float16",
                     trtllm_version="0.11", triton={"enable_kv_cache_reuse": True})
    assert M.MSG_DTYPE.format(family="CogVLM", dtype="float16", allowed="bfloat16") in found
    assert M.MSG_KV_REUSE_NO_PAGED.format(family="CogVLM", version="0.11") in found


def test_internlm_xcomposer2_partial_lora(tmp_path):
    plan = plan_for(tmp_path, "internlm-xcomposer2", "0.19")
    check_documented(plan)
    out = tmp_path / "out"
    convert = step(plan, "convert")
    assert convert.argv[1].endswith("examples/internlm2/convert_checkpoint.py")
    assert convert.cwd == str(out / "lora_adapter")  # upstream writes the adapter into the working folder
    build = step(plan, "build-llm")
    assert value(build.argv, "--lora_dir") == str(out / "lora_adapter")
    assert value(build.argv, "--max_lora_rank") == "256" and value(build.argv, "--lora_plugin") == "float16"
    assert value(build.argv, "--max_multimodal_len") == "58800"  # 48 x 1225
    lora = step(plan, "lora-1")
    assert value(lora.argv, "-i") == str(out / "lora_adapter") and value(lora.argv, "--storage-type") == "float16"
    assert value(step(plan, "visual").argv, "--model_type") == "internlm-xcomposer2"
    old = plan_for(tmp_path, "internlm-xcomposer2", "0.11")
    assert value(step(old, "visual").argv, "--model_type") == "internlm-xcomposer2-vl-7b"
    assert value(step(old, "build-llm").argv, "--max_output_len") == "200"
    assert any("Njuapp" in w for w in old.warnings)


def test_mllama(tmp_path):
    plan = plan_for(tmp_path, "mllama", "0.19")
    check_documented(plan)
    build = step(plan, "build-llm")
    assert value(build.argv, "--max_encoder_input_len") == "6404"
    assert value(build.argv, "--max_num_tokens") == "4096" and value(build.argv, "--max_seq_len") == "2048"
    assert "--max_multimodal_len" not in build.argv
    # the 0.16 and 1.x runners handle mllama (runner_eras.yaml): before 0.16 the plan stops after the engines
    early = plan_for(tmp_path / "0.15", "mllama", "0.15")
    assert not early.deploy_steps() and "from backend 0.16; with 0.15" in early.triton_note
    assert [s.id for s in plan.deploy_steps()][-2:] == ["repository", "launch"]
    assert "the 0.16 and 1.x runners" in plan.triton_note and "no LoRA" in plan.triton_note
    assert M.MSG_FAMILY_TOO_NEW.format(family="Llama-3.2-Vision (mllama)", min_version="0.15", version="0.11") in \
        problems(tmp_path, family="mllama", checkpoint=str(tmp_path / "ckpt"), trtllm_version="0.11")


@pytest.mark.parametrize("family_id", ["gpt", "llava-next", "vila", "deplot", "fuyu", "kosmos-2", "nougat",
                                       "phi-3-vision", "llava-onevision", "qwen2-vl"])
def test_other_families_use_documented_flags(tmp_path, family_id):
    extra = {"vila_path": str(tmp_path)} if family_id == "vila" else {}
    plan = plan_for(tmp_path, family_id, "0.19", **extra)
    check_documented(plan)


@pytest.mark.parametrize("family_id", ["neva", "video-neva"])
def test_nemo_families_take_a_file(tmp_path, family_id):
    nemo = tmp_path / "model.nemo"
    nemo.write_bytes(b"x")
    plan = plan_for(tmp_path, family_id, "0.19", checkpoint=nemo)
    check_documented(plan)
    assert value(step(plan, "convert").argv, "--nemo_ckpt_path") == str(nemo)


def test_vila_multi_image(tmp_path):
    plan = plan_for(tmp_path, "vila", "0.19", vila_path=str(tmp_path))
    assert value(step(plan, "build-llm").argv, "--max_multimodal_len") == "6272"  # 8 x 196 x 4
    assert value(step(plan, "visual").argv, "--max_batch_size") == "32"
    assert value(step(plan, "visual").argv, "--vila_path") == str(tmp_path)


# ----- LoRA derived values -------------------------------------------------------------------------------------


def test_lora_cache_sizes_from_the_adapters(tmp_path):
    lora = tmp_path / "adapters"
    make_adapter(lora / "a", 8, ("q_proj", "v_proj"), size=100 * 2**20)
    make_adapter(lora / "b", 16, ("q_proj", "k_proj", "o_proj", "up_proj"))
    plan = plan_for(tmp_path, "llama", "0.19", lora_dir=str(lora))
    check_documented(plan)
    derived = plan.derived["lora"]
    assert derived["max_lora_rank"] == 16
    assert derived["cache"]["lora_cache_max_adapter_size"] == 16
    assert derived["cache"]["lora_cache_host_memory_bytes"] >= 100 * 2**20
    build = step(plan, "build-llm").argv
    modules = list(build[build.index("--lora_target_modules") + 1: build.index("--max_lora_rank")])
    assert modules == ["attn_dense", "attn_k", "attn_q", "attn_v", "mlp_gate"]
    assert [s.id for s in plan.steps if s.phase == "lora"] == ["lora-1", "lora-2"]
    repo = step(plan, "repository").argv
    assert "lora_prefetch_dir=" + str(tmp_path / "out/lora") in repo
    assert "lora_cache_optimal_adapter_size=16" in repo
    old = plan_for(tmp_path, "llama", "0.15", lora_dir=str(lora))
    assert not any(a.startswith("lora_prefetch_dir=") for a in step(old, "repository").argv)


def test_single_adapter_folder_and_explicit_rank(tmp_path):
    adapter = make_adapter(tmp_path / "one", 4)
    plan = plan_for(tmp_path, "gpt", "0.19", lora_dir=str(adapter), max_lora_rank=32)
    assert plan.derived["lora"]["max_lora_rank"] == 32
    assert value(step(plan, "build-llm").argv, "--max_lora_rank") == "32"


# ----- validation: one message per problem, all collected --------------------------------------------------


def test_every_problem_is_reported_at_once(tmp_path):
    ckpt = make_checkpoint(tmp_path / "ckpt", heads=30)
    found = problems(tmp_path, family="llava-1.5", checkpoint=str(ckpt), trtllm_version="0.19", tp=4, dtype="float32",
                     max_input_len=500, max_seq_len=400, max_num_images=2, lora_dir=str(tmp_path / "nope"),
                     tokenizer_dir=str(tmp_path / "tok"), triton={"kv_cache_free_gpu_mem_fraction": 1.5,
                                                                     "no_such_parameter": 1,
                                                                     "triton_max_batch_size": 64})
    assert found == [
        M.MSG_TOKENIZER_MISSING.format(path=tmp_path / "tok"),
        M.MSG_LORA_MISSING.format(path=tmp_path / "nope"),
        M.MSG_DTYPE.format(family="LLaVA-1.5", dtype="float32", allowed="float16"),
        M.MSG_TP_HEADS.format(tp=4, heads=30, config=ckpt / "config.json"),
        M.MSG_SEQ_LEN.format(seq=400, inp=500),
        M.MSG_TOO_MANY_IMAGES.format(images=2, family="LLaVA-1.5", limit=1),
        M.MSG_INPUT_TOO_SHORT.format(inp=500, tokens=576, images=2, needed=1152),
        M.MSG_LORA_UNSUPPORTED.format(family="LLaVA-1.5"),
        M.MSG_UNKNOWN_TRITON.format(name="no_such_parameter"),
        M.MSG_KV_FRACTION.format(value=1.5),
        M.MSG_TRITON_BATCH.format(value=64, engine=8),
    ]


def test_heads_read_from_text_config(tmp_path):
    ckpt = make_checkpoint(tmp_path / "nested", heads=40, nested=True)
    assert M.MSG_TP_HEADS.format(tp=3, heads=40, config=ckpt / "config.json") in problems(
        tmp_path, family="llava-1.5", checkpoint=str(ckpt), trtllm_version="0.19", tp=3)
    assert plan_for(tmp_path, "llava-1.5", checkpoint=ckpt, tp=4).derived["world_size"] == 4


def test_unknown_head_count_warns(tmp_path):
    ckpt = tmp_path / "noconfig"
    ckpt.mkdir()
    plan = plan_for(tmp_path, "llama", checkpoint=ckpt, tp=2)
    assert M.WARN_HEADS_UNKNOWN.format(config=ckpt / "config.json") in plan.warnings


def test_path_and_name_messages(tmp_path):
    assert problems(tmp_path, family="nope", checkpoint="", trtllm_version="0.19") == [
        M.MSG_UNKNOWN_FAMILY.format(family="nope", choices=", ".join(sorted_ids())), M.MSG_NO_CHECKPOINT]
    assert problems(tmp_path, family="llama", checkpoint=str(tmp_path / "x"), trtllm_version="banana", out="") == [
        M.MSG_BAD_VERSION.format(version="banana"), M.MSG_NO_OUT, M.MSG_CHECKPOINT_MISSING.format(path=tmp_path / "x")]
    file = tmp_path / "f.bin"
    file.write_bytes(b"x")
    assert problems(tmp_path, family="llama", checkpoint=str(file), trtllm_version="0.19") == [
        M.MSG_CHECKPOINT_NOT_DIR.format(path=file)]
    assert problems(tmp_path, family="neva", checkpoint=str(tmp_path), trtllm_version="0.19") == [
        M.MSG_CHECKPOINT_NOT_FILE.format(family="NeVA", path=tmp_path)]
    ckpt = make_checkpoint(tmp_path / "ckpt")
    assert problems(tmp_path, family="vila", checkpoint=str(ckpt), trtllm_version="0.19") == [
        M.MSG_VILA_PATH.format(family="VILA")]
    assert problems(tmp_path, family="vila", checkpoint=str(ckpt), trtllm_version="0.19",
                    vila_path=str(tmp_path / "v")) == [M.MSG_VILA_PATH_MISSING.format(path=tmp_path / "v")]
    assert problems(tmp_path, family="llama", checkpoint=str(ckpt), trtllm_version="0.19", tp=0, max_batch_size=0) == [
        M.MSG_POSITIVE.format(name="max_batch_size", value=0), M.MSG_POSITIVE.format(name="tp", value=0)]


def sorted_ids():
    from setup.catalog.builds import families

    return list(families())


def test_lora_messages(tmp_path):
    ckpt = str(make_checkpoint(tmp_path / "ckpt"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert problems(tmp_path, family="llama", checkpoint=ckpt, trtllm_version="0.19", lora_dir=str(empty)) == [
        M.MSG_LORA_EMPTY.format(path=empty)]
    bad = tmp_path / "bad" / "x"
    bad.mkdir(parents=True)
    (bad / "adapter_config.json").write_text("{not json")
    found = problems(tmp_path, family="llama", checkpoint=ckpt, trtllm_version="0.19", lora_dir=str(bad.parent))
    assert len(found) == 1 and found[0].startswith(f"Adapter {bad}: adapter_config.json is not readable")
    lora = tmp_path / "ranks"
    make_adapter(lora / "big", 64)
    assert problems(tmp_path, family="llama", checkpoint=ckpt, trtllm_version="0.19", lora_dir=str(lora),
                    max_lora_rank=16, triton={"lora_cache_max_adapter_size": 32}) == [
        M.MSG_LORA_RANK.format(name="big", rank=64, max_rank=16),
        M.MSG_LORA_CACHE_RANK.format(size=32, max_rank=16)]


def test_config_values_must_be_whole_numbers():
    with pytest.raises(ConfigError) as info:
        PlanConfig.from_mapping({"tp": "two", "max_seq_len": 1.5, "colour": "red"})
    assert info.value.problems == [M.MSG_UNKNOWN_KEYS.format(where="config", keys="colour"),
                                   M.MSG_NOT_A_NUMBER.format(name="tp", value="two"),
                                   M.MSG_NOT_A_NUMBER.format(name="max_seq_len", value=1.5)]


# ----- shell script and CLI ----------------------------------------------------------------------------------


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "setup", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_cli_plan_prints_valid_quoted_shell(tmp_path):
    ckpt = make_checkpoint(tmp_path / "my ckpt; rm -rf 'x'")
    out = tmp_path / "out dir"
    result = run_cli("plan", "--family", "llava-1.5", "--checkpoint", str(ckpt), "--tp", "2", "--out", str(out),
                     "--trtllm-version", "0.19", "--trtllm-root", "/opt/TensorRT LLM", "--triton",
                     "kv_cache_free_gpu_mem_fraction=0.8")
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0
    commands = [line for line in script.splitlines() if line and not line.startswith("#") and line != "set -euo pipefail"]
    plan = plan_for(tmp_path, "llava-1.5", checkpoint=ckpt, tp=2)
    assert len(commands) == len(plan.steps) == 6
    assert shlex.split(commands[0])[-1] == "--dry-run"
    first = shlex.split(commands[1])
    assert first[first.index("--model_dir") + 1] == str(ckpt)
    assert first[1] == "/opt/TensorRT LLM/examples/llama/convert_checkpoint.py"
    assert "kv_cache_free_gpu_mem_fraction=0.8" in shlex.split(commands[4])
    echo = subprocess.run(["bash", "-c", "printf '%s\\n' " + commands[1].split(" ", 1)[1]], capture_output=True,
                          text=True)
    assert str(ckpt) in echo.stdout.splitlines()


def test_cli_plan_from_config_file_with_flag_override(tmp_path):
    ckpt = make_checkpoint(tmp_path / "ckpt")
    config = tmp_path / "build.yaml"
    config.write_text(json.dumps({"family": "llama", "checkpoint": str(ckpt), "out": str(tmp_path / "o"),
                                  "trtllm_version": "0.11", "tp": 2, "triton": {"decoupled_mode": False}}))
    result = run_cli("plan", "--config", str(config), "--tp", "4")
    assert result.returncode == 0, result.stderr
    assert "--tp_size 4" in result.stdout and "--max_output_len" in result.stdout
    assert "--no-streaming" in result.stdout and "decoupled_mode=false" in result.stdout


def test_cli_plan_errors_are_one_line_each_exit_2(tmp_path):
    result = run_cli("plan", "--family", "cogvlm", "--checkpoint", str(tmp_path / "none"), "--dtype", "float16",
                     "--out", str(tmp_path), "--trtllm-version", "0.19")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [  # a checkpoint not downloaded yet is no error for a plan (test_checks.py)
        f"error: {M.MSG_DTYPE.format(family='CogVLM', dtype='float16', allowed='bfloat16')}"]
    missing = run_cli("plan", "--family", "llama", "--checkpoint", str(tmp_path), "--out", str(tmp_path))
    assert missing.returncode == 2 and missing.stderr.strip() == "error: Give the TensorRT-LLM version " \
        "(--trtllm-version, e.g. 0.19)."
    bad = run_cli("plan", "--family", "llama", "--tp", "two", "--trtllm-version", "0.19")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "error:" in bad.stderr


def test_cli_repo_takes_parameters_as_flags(tmp_path):
    result = run_cli("repo", "--template", "inflight_batcher_llm", "--engine", "tensorrtllm", "--set",
                     f"engine_dir={tmp_path / 'engine'}", "--set", f"tokenizer_dir={tmp_path}", "--set",
                     "triton_max_batch_size=4", "--out", str(tmp_path / "repo"))
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "repo" / "tensorrt_llm" / "config.pbtxt").read_text()
    assert str(tmp_path / "engine") in text and "max_batch_size: 4" in text


def test_the_script_numbers_steps_as_they_run(tmp_path):
    """The Build page's run log numbers the build steps [1/N] (it runs them alone); the script shown as the plan
    numbers them the same way and the deploy steps on their own (it once said n/7 where the log said 1/5)."""
    from setup.jobs.runner import Runner

    plan = plan_for(tmp_path, "llava-1.5")
    script = plan.to_shell()
    built, deployed = plan.build_steps(), plan.deploy_steps()
    assert built and deployed
    for number, built_step in enumerate(built, 1):
        assert f"# [{number}/{len(built)}] {built_step.title}" in script
    for number, deploy_step in enumerate(deployed, 1):
        assert f"# [deploy {number}/{len(deployed)}] {deploy_step.title}" in script
    log = tmp_path / "run.log"
    Runner(built[:1], tmp_path / "out", log).run()  # the run log's first line names the step the same way
    assert log.read_text().splitlines()[0] == f"==> [1/1] {built[0].title}"


def test_the_plans_own_steps_run_the_installed_package_not_a_setup_py_of_the_working_folder(tmp_path):
    """`python -m setup` puts the working folder first on the import path: an app started in a folder holding a
    setup.py ran that file as the download step. -P keeps the folder off the path."""
    plan = plan_for(tmp_path, "llava-1.5", model_id="org/name")
    own = [s for s in plan.steps if "setup" in s.argv[:4]]
    assert {s.id for s in own} >= {"download"} and all(s.argv[1:4] == ("-P", "-m", "setup") or
                                                        list(s.argv[1:4]) == ["-P", "-m", "setup"] for s in own)
    trap = tmp_path / "elsewhere"
    trap.mkdir()
    (trap / "setup.py").write_text("print('the folder\\'s setup.py ran')\n")
    shown = subprocess.run([*own[0].argv[:4], "--help"], cwd=trap, capture_output=True, text=True, check=True)
    assert "setup.py ran" not in shown.stdout and "usage: python -m setup" in shown.stdout
