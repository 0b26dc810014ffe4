"""The InternLM-XComposer2 templates (community topology): the written configs as Triton parses them, the
writer's checks, the atomic write, `repo --family`, and the tensor drift against the text templates."""

from __future__ import annotations

import json
import re

import pytest
from tritonclient.grpc import model_config_pb2

from setup.__main__ import main
from setup.paths import TEMPLATES_DIR
from setup.repo import writer as writer_module
from setup.repo.fill import placeholders
from setup.repo.writer import (
    SHARED_DIR,
    DeploymentConfig,
    RepoError,
    dry_run,
    family_deployment,
    load_template,
    parameter_specs,
    parse_model_config,
    write_repository,
)

TEMPLATE = "internlm_xcomposer2"
MODELS = {"ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"}
FP16, INT32, UINT64 = (model_config_pb2.DataType.Value(n) for n in ("TYPE_FP16", "TYPE_INT32", "TYPE_UINT64"))


def engines(tmp_path, batch=48, table=None, lora_plugin="float16", rank=256, engine_file="model.engine"):
    llm, visual = tmp_path / "llm", tmp_path / "visual"
    llm.mkdir(exist_ok=True)
    visual.mkdir(exist_ok=True)
    build = {"max_batch_size": batch, "max_prompt_embedding_table_size": batch * 1225 if table is None else table,
             "plugin_config": {"lora_plugin": lora_plugin}, "lora_config": {"max_lora_rank": rank}}
    (llm / "config.json").write_text(json.dumps({"pretrained_config": {"vocab_size": 92544}, "build_config": build}))
    (visual / engine_file).write_bytes(b"plan")
    return llm, visual / engine_file


def xc2_config(tmp_path, **parameters) -> DeploymentConfig:
    llm, plan = engines(tmp_path)
    template, defaults = family_deployment("internlm-xcomposer2")
    base = {"engine_dir": str(llm), "tokenizer_dir": "/hf/xcomposer2", "vit_plan_dir": str(plan)}
    return DeploymentConfig(template=template, parameters={**defaults, **base, **parameters})


def written(repo, model) -> model_config_pb2.ModelConfig:
    return parse_model_config((repo / model / "config.pbtxt").read_text(), model)


def params(config) -> dict[str, str]:
    return {k: v.string_value for k, v in config.parameters.items()}


def tensors(items) -> dict:
    return {t.name: (t.data_type, tuple(t.dims), getattr(t, "optional", False)) for t in items}


@pytest.fixture
def repo(tmp_path):
    return write_repository(xc2_config(tmp_path), tmp_path / "repo")


def test_the_layout_has_no_encoder_model_and_every_config_parses(repo):
    assert {p.name for p in repo.iterdir()} == MODELS
    for model in MODELS:
        config = written(repo, model)
        assert config.name == model and config.max_batch_size == 32  # the fork's Triton batch
        assert not placeholders((repo / model / "config.pbtxt").read_text())
        assert (repo / model / "1").is_dir()


def test_each_preprocessing_gets_the_shared_helpers_beside_its_code(repo, tmp_path):
    """model_repo_templates/shared/ files are written once and copied into every model folder that uses them
    (each stands alone at run time): this layout's preprocessing and the text layout's."""
    for name in ("model_params.py", "word_lists.py"):
        assert (repo / "preprocessing" / "1" / name).read_bytes() == (SHARED_DIR / name).read_bytes()
        assert f"from {name[:-3]} import" in (repo / "preprocessing" / "1" / "model.py").read_text()
        assert not (repo / "postprocessing" / "1" / name).exists()
    both = {"preprocessing": ("fast_tokenizer.py", "model_params.py", "tokenizer_only.py", "word_lists.py",
                              "request_loop.py"),
            "postprocessing": ("fast_tokenizer.py", "tokenizer_only.py", "request_loop.py"),
            "tensorrt_llm_bls": ("gil_safe.py",)}
    assert (repo / "tensorrt_llm_bls" / "1" / "gil_safe.py").is_file()
    assert load_template("inflight_batcher_llm").shared == both
    assert load_template("internlm_xcomposer2_cpu").shared == both


def test_a_shared_file_that_is_not_there_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "SHARED_DIR", tmp_path / "nowhere")
    with pytest.raises(RepoError, match=r"shares fast_tokenizer.py with its postprocessing model, but .*nowhere"):
        write_repository(xc2_config(tmp_path), tmp_path / "repo")


def test_preprocessing_takes_one_image_and_returns_the_table(repo):
    config = written(repo, "preprocessing")
    inputs, outputs = tensors(config.input), tensors(config.output)
    assert inputs["IMAGE_INPUT"] == (FP16, (3, 490, 490), False)  # required
    assert inputs["LORA_TASK_ID"] == (UINT64, (1,), True)
    assert outputs["OUT_PROMPT_EMBEDDING_TABLE"][:2] == (FP16, (-1, -1))
    assert outputs["OUT_PROMPT_VOCAB_SIZE"][:2] == (INT32, (1,))
    assert outputs["OUT_LORA_TASK_ID"][:2] == (UINT64, (1,))
    values = params(config)
    assert values["vit_plan_dir"].endswith("visual/model.engine") and values["image_marker"] == "<ImageHere>"
    assert values["tokens_per_image"] == "1225" and values["lora_task_id"] == "1"
    assert "def split_at_marker" in (repo / "preprocessing" / "1" / "model.py").read_text()  # ours, not the base's


def test_engine_has_the_fork_serving_defaults(repo):
    values = params(written(repo, "tensorrt_llm"))
    assert values["exclude_input_in_output"] == "true"
    assert values["lora_cache_optimal_adapter_size"] == values["lora_cache_max_adapter_size"] == "256"
    assert values["lora_cache_gpu_memory_fraction"] == "0.3"
    assert values["lora_cache_host_memory_bytes"] == "2147483648"
    assert values["gpt_model_type"] == "inflight_fused_batching"
    assert values["batch_scheduler_policy"] == "max_utilization"
    assert params(written(repo, "postprocessing"))["skip_special_tokens"] == "true"
    bls = params(written(repo, "tensorrt_llm_bls"))
    assert bls["accumulate_tokens"] == "false" and bls["vision_in_preprocessing"] == "true"


def test_ensemble_routes_the_table_and_the_lora_task_from_preprocessing(repo):
    config = written(repo, "ensemble")
    assert tensors(config.input)["image_input"] == (FP16, (3, 490, 490), False)
    steps = {s.model_name: s for s in config.ensemble_scheduling.step}
    assert set(steps) == {"preprocessing", "tensorrt_llm", "postprocessing"}
    pre, llm = steps["preprocessing"], steps["tensorrt_llm"]
    assert pre.input_map["IMAGE_INPUT"] == "image_input" and pre.input_map["LORA_TASK_ID"] == "lora_task_id"
    assert pre.input_map["LORA_WEIGHTS"] == "lora_weights" and pre.input_map["LORA_CONFIG"] == "lora_config"
    for key, target in (("prompt_embedding_table", "OUT_PROMPT_EMBEDDING_TABLE"),
                        ("prompt_vocab_size", "OUT_PROMPT_VOCAB_SIZE"), ("lora_task_id", "OUT_LORA_TASK_ID"),
                        ("lora_weights", "OUT_LORA_WEIGHTS"), ("lora_config", "OUT_LORA_CONFIG")):
        assert llm.input_map[key] == pre.output_map[target]
    assert params(config)["multimodal_family"] == "internlm-xcomposer2"


def test_drift_against_the_text_templates():
    def inputs(template, model):
        text = (TEMPLATES_DIR / template / model / "config.pbtxt").read_text()
        text = text.replace("${logits_datatype}", "TYPE_FP32").replace("${encoder_input_features_data_type}", "TYPE_FP16")
        return tensors(parse_model_config(re.sub(r"\$\{\w+\}", "1", text), model).input)

    text_bls, bls = inputs("inflight_batcher_llm", "tensorrt_llm_bls"), inputs(TEMPLATE, "tensorrt_llm_bls")
    assert set(bls) - set(text_bls) == {"image_input"} and {k: bls[k] for k in text_bls} == text_bls
    text_pre, pre = inputs("inflight_batcher_llm", "preprocessing"), inputs(TEMPLATE, "preprocessing")
    assert set(pre) - set(text_pre) == {"IMAGE_INPUT", "LORA_TASK_ID", "LORA_WEIGHTS", "LORA_CONFIG"}
    assert set(text_pre) - set(pre) == {"IMAGE_BYTES", "IMAGE_URL", "VIDEO_BYTES"}  # upstream kinds: pixels only here
    assert {k: text_pre[k] for k in pre if k in text_pre} == {k: pre[k] for k in pre if k in text_pre}
    text_ens, ens = inputs("inflight_batcher_llm", "ensemble"), inputs(TEMPLATE, "ensemble")
    assert set(ens) - set(text_ens) == {"image_input"}
    assert set(text_ens) - set(ens) == {"prompt_embedding_table", "prompt_vocab_size"}  # preprocessing makes them


def test_placeholders_are_documented_and_the_template_chain_resolves():
    specs = parameter_specs()
    for config in (TEMPLATES_DIR / TEMPLATE).glob("*/config.pbtxt"):
        assert not placeholders(config.read_text()) - set(specs), config
    template = load_template(TEMPLATE)
    assert set(template.models) == MODELS and template.checks == ("xcomposer2",)
    assert set(template.defaults) <= set(specs)


@pytest.mark.parametrize("version", ["0.11", "0.17", "0.20"])
def test_every_release_writes(tmp_path, version):
    config = xc2_config(tmp_path)
    config.trtllm_version = version
    out = write_repository(config, tmp_path / f"repo-{version}")
    steps = {s.model_name: s for s in written(out, "ensemble").ensemble_scheduling.step}
    assert steps["tensorrt_llm"].input_map["lora_task_id"] == "_LORA_TASK_ID"


@pytest.mark.parametrize("change, match", [
    ({"vit_plan_dir": "{visual}"}, r"the visual engine file, not its folder.*did you mean .*model\.engine"),
    ({"vit_plan_dir": "{visual}/nothing.engine"}, "does not exist"),
    ({"vit_plan_dir": ""}, "needs vit_plan_dir"),
    ({"image_marker": "<image>"}, "<ImageHere>"),
    ({"tokens_per_image": 576}, "1225 visual tokens"),
    ({"lora_cache_max_adapter_size": 64}, "below the Partial-LoRA rank 256"),
])
def test_checks_name_the_problem(tmp_path, change, match):
    config = xc2_config(tmp_path)
    visual = tmp_path / "visual"
    config.parameters.update({k: str(v).format(visual=visual) if isinstance(v, str) else v for k, v in change.items()})
    with pytest.raises(RepoError, match=match):
        write_repository(config, tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("engine, match", [
    ({"table": 48 * 576}, "--max_multimodal_len 58800"),
    ({"lora_plugin": None}, "without the LoRA plugin"),
    ({"rank": 64}, "--max_lora_rank 256"),
])
def test_engine_build_is_checked(tmp_path, engine, match):
    config = xc2_config(tmp_path)
    engines(tmp_path, **engine)
    with pytest.raises(RepoError, match=match):
        write_repository(config, tmp_path / "repo")


def test_fork_engine_file_name_is_accepted(tmp_path):
    config = xc2_config(tmp_path)
    _, plan = engines(tmp_path, engine_file="visual_encoder.engine")
    config.parameters["vit_plan_dir"] = str(plan)
    assert (write_repository(config, tmp_path / "repo") / "preprocessing").is_dir()


def test_dry_run_needs_no_engine_files(tmp_path):
    template, defaults = family_deployment("internlm-xcomposer2")
    dry_run(DeploymentConfig(template=template, parameters={**defaults, "engine_dir": "/nowhere",
                                                             "tokenizer_dir": "/nowhere"}))


def test_a_failure_half_way_leaves_nothing_new(tmp_path, monkeypatch):
    config, out = xc2_config(tmp_path), tmp_path / "repo"
    real = writer_module.render_model

    def render(model, *args, **kwargs):
        if model == "tensorrt_llm_bls":  # after ensemble .. tensorrt_llm are on disk in the staging folder
            raise RepoError("disk full")
        return real(model, *args, **kwargs)

    monkeypatch.setattr(writer_module, "render_model", render)
    with pytest.raises(RepoError, match="disk full"):
        write_repository(config, out)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".repo")]
    monkeypatch.setattr(writer_module, "render_model", real)
    write_repository(config, out)
    before = (out / "tensorrt_llm" / "config.pbtxt").read_text()
    monkeypatch.setattr(writer_module, "render_model", render)
    with pytest.raises(RepoError):
        write_repository(config, out, force=True)
    assert (out / "tensorrt_llm" / "config.pbtxt").read_text() == before  # the old repository is untouched


def test_cli_writes_validates_and_dry_runs(tmp_path, capsys):
    llm, plan = engines(tmp_path)
    args = ["repo", "--family", "internlm-xcomposer2", "--set", f"engine_dir={llm}", "--set", "tokenizer_dir=/hf/x",
            "--set", f"vit_plan_dir={plan}", "--out", str(tmp_path / "repo")]
    assert main([*args, "--dry-run"]) == 0 and not (tmp_path / "repo").exists()
    assert main(args) == 0
    assert params(written(tmp_path / "repo", "tensorrt_llm"))["batch_scheduler_policy"] == "max_utilization"
    assert main([*args[:-2], "--set", "batch_scheduler_policy=guaranteed_no_evict", "--out", str(tmp_path / "r2")]) == 0
    assert params(written(tmp_path / "r2", "tensorrt_llm"))["batch_scheduler_policy"] == "guaranteed_no_evict"
    bad = [a.replace(str(plan), str(plan.parent)) for a in args]
    assert main([*bad[:-1], str(tmp_path / "r3")]) == 2 and not (tmp_path / "r3").exists()
    assert "not its folder" in capsys.readouterr().err


def test_family_deployment_refuses_unserved_families(monkeypatch):
    import setup.catalog.builds as builds
    from setup.catalog.family_data import family_files

    raw = family_files()["mllama"]
    refused = builds._build_view({**raw, "build": {**raw["build"], "triton": {"refused": "no processor wiring"}}})
    known = dict(builds.families())
    monkeypatch.setattr(builds, "families", lambda: {**known, "mllama": refused})
    with pytest.raises(RepoError, match=r"Llama-3.2-Vision \(mllama\) has no Triton repository"):
        family_deployment("mllama")
    monkeypatch.undo()
    assert family_deployment("mllama") == ("multimodal_runner", {**family_deployment("cogvlm")[1],
                                                                  "runner_eras": "0.16,1.x", "takes_lora": False,
                                                                  "multimodal_family": "mllama"})
    assert family_deployment("cogvlm")[0] == "multimodal_runner"
    with pytest.raises(RepoError, match="Unknown family"):
        family_deployment("nope")
    assert family_deployment("llama") == ("inflight_batcher_llm", {})
