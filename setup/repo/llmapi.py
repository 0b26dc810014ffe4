"""Triton `llmapi` repositories (TensorRT-LLM 1.x, PyTorch backend): the release's config.pbtxt and
1/model.yaml with the LLM arguments, validated and written atomically.

A GPU repository takes the model's Python files (model.py, helpers.py) from the user's checkout of the
release: they are TensorRT-LLM's code, not ours. A CPU repository gets our stand-in
(model_repo_templates/llmapi/cpu/), with the parts of cpu_runtime it imports (the CPU engine core, the image
encoder and the stand-in's own parts, as its template.yaml says) copied beside it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.catalog.llmapi_releases import LATEST, LlmApiModelRelease, llmapi_releases, resolve_llmapi_release
from setup.paths import TEMPLATES_DIR
from setup.repo.atomic import staged_folder
from setup.repo.fill import FillError, fill
from setup.repo.messages import (
    MSG_CHECKOUT_CONFIG,
    MSG_CHECKOUT_ONLY,
    MSG_CODE,
    MSG_ENGINE,
    MSG_EXISTS,
    MSG_FRACTION,
    MSG_GPU_IDS,
    MSG_NO_IMAGES,
    MSG_NO_INSTANCES,
    MSG_NO_LORA,
    MSG_NO_MODEL,
    MSG_POSITIVE,
    MSG_RESERVED,
)
from setup.repo.runtime import copy_runtime, declared_runtime
from setup.repo.writer import RepoError, parse_model_config

TEMPLATE_DIR = TEMPLATES_DIR / "llmapi"
MODEL = "tensorrt_llm"
STANDIN_TEMPLATE = TEMPLATE_DIR / "cpu"  # its template.yaml names the cpu_runtime parts the stand-in imports
STANDIN_DIR = STANDIN_TEMPLATE / MODEL / "1"
CODE_FILES = ("model.py", "helpers.py")
MODEL_YAML = "model.yaml"
ENGINES = ("tensorrtllm", "cpu")
GPU_GROUPS = re.compile(r"\d+(,\d+)*(;\d+(,\d+)*)*")
RESERVED_KEYS = ("triton_config", "model", "backend")



@dataclass
class LlmApiRepoConfig:
    """What an llmapi repository is written from; None leaves the LLM API's own default."""

    model: str = ""
    trtllm_version: str = LATEST
    engine: str = "tensorrtllm"
    tp: int = 1
    pp: int = 1
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    max_input_len: int | None = None
    max_seq_len: int | None = None
    kv_cache_fraction: float | None = None
    block_reuse: bool | None = None
    lora: dict | None = None  # lora_config: max_lora_rank, max_loras, max_cpu_loras, lora_target_modules
    multimodal: bool = False
    streaming: bool = True
    cancellation_check_period_ms: int = 100
    instances: int = 1
    gpu_device_ids: str | None = None
    code_dir: str | None = None  # GPU: the folder with model.py/helpers.py, or a checkout of the release
    extra: dict = field(default_factory=dict)  # more LLM() arguments, passed as they are
    parameters: dict = field(default_factory=dict)  # config.pbtxt parameters (the CPU stand-in's encoder folder)

    def release(self) -> LlmApiModelRelease:
        try:
            return resolve_llmapi_release(self.trtllm_version)
        except ValueError as exc:
            raise RepoError(str(exc)) from None


def check_config(config: LlmApiRepoConfig) -> list[str]:
    """One sentence per problem of `config` (empty when it can be written)."""
    problems = []
    try:
        release = config.release()
    except RepoError as exc:
        return [str(exc)]
    if config.engine not in ENGINES:
        problems.append(MSG_ENGINE.format(choices=", ".join(ENGINES), value=config.engine))
    if not str(config.model).strip():
        problems.append(MSG_NO_MODEL)
    for name in ("tp", "pp", "instances", "cancellation_check_period_ms", "max_batch_size", "max_num_tokens",
                 "max_input_len", "max_seq_len"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            problems.append(MSG_POSITIVE.format(name=name, value=value))
    if config.kv_cache_fraction is not None and not 0 < float(config.kv_cache_fraction) <= 1:
        problems.append(MSG_FRACTION.format(value=config.kv_cache_fraction))
    if release.config_from_checkout and config.engine == "cpu":
        recorded = [key for key, r in llmapi_releases().items() if not r.config_from_checkout]
        problems.append(MSG_CHECKOUT_ONLY.format(release=release.key, recorded=", ".join(recorded)))
    if config.lora and not release.has("lora_by_path"):
        problems.append(MSG_NO_LORA.format(release=release.key))
    if config.multimodal and not release.has("image_url"):
        problems.append(MSG_NO_IMAGES.format(release=release.key))
    if config.instances != 1 and not release.has("multi_instance"):
        problems.append(MSG_NO_INSTANCES.format(release=release.key))
    elif isinstance(config.instances, int) and config.instances > 1 and not gpu_groups_ok(config):
        problems.append(MSG_GPU_IDS.format(width=config.tp * config.pp, value=config.gpu_device_ids or "",
                                           instances=config.instances))
    problems += [MSG_RESERVED.format(key=key) for key in config.extra if key in RESERVED_KEYS]
    return problems


def gpu_groups_ok(config: LlmApiRepoConfig) -> bool:
    text = (config.gpu_device_ids or "").replace(" ", "")
    if not GPU_GROUPS.fullmatch(text):
        return False
    groups = [group.split(",") for group in text.split(";")]
    ids = [g for group in groups for g in group]
    return (len(groups) == config.instances and all(len(g) == config.tp * config.pp for g in groups)
            and len(set(ids)) == len(ids))


def model_yaml(config: LlmApiRepoConfig) -> dict:
    """model.yaml: every key but triton_config goes to tensorrt_llm.LLM(...)."""
    release = config.release()
    args: dict = {"model": str(config.model), "backend": "pytorch", "tensor_parallel_size": config.tp,
                  "pipeline_parallel_size": config.pp}
    for name in ("max_batch_size", "max_num_tokens", "max_input_len", "max_seq_len"):
        if getattr(config, name) is not None:
            args[name] = int(getattr(config, name))
    kv: dict = {}
    if config.kv_cache_fraction is not None:
        kv["free_gpu_memory_fraction"] = float(config.kv_cache_fraction)
    if config.block_reuse is not None:
        kv["enable_block_reuse"] = bool(config.block_reuse)
    if kv:
        args["kv_cache_config"] = kv
    if config.lora:
        args["lora_config"] = dict(config.lora)
    args.update(config.extra)
    triton: dict = {"max_batch_size": 0, "decoupled": bool(config.streaming)}
    if "cancellation_check_period_ms" in release.triton_config_keys:
        triton["cancellation_check_period_ms"] = int(config.cancellation_check_period_ms)
    if config.multimodal and "multimodal" in release.triton_config_keys:
        triton["multimodal"] = True
    return {**args, "triton_config": triton}


def model_yaml_text(config: LlmApiRepoConfig) -> str:
    release = config.release()
    head = (f"# Triton llmapi model, TensorRT-LLM {release.key}: every key except triton_config is passed to "
            "tensorrt_llm.LLM(...).\n")
    text = head + yaml.safe_dump(model_yaml(config), sort_keys=False)
    if "${" in text:
        raise RepoError(f"{MODEL}/1/{MODEL_YAML}: a value still holds a '${{...}}' placeholder.")
    return text


def _edit(config: model_config_pb2.ModelConfig, release: LlmApiModelRelease) -> None:
    kept = [t for t in config.input if t.name not in release.drop_inputs]
    del config.input[:]
    config.input.extend(kept)
    for tensor in config.input:
        tensor.name = release.rename_inputs.get(tensor.name, tensor.name)
    outputs = [t for t in config.output if t.name not in release.drop_outputs]
    del config.output[:]
    config.output.extend(outputs)


def _config_source(config: LlmApiRepoConfig) -> Path:
    """Our template, or for a release whose tensors are not recorded, upstream's own file in the checkout."""
    if config.release().config_from_checkout:
        return find_model_code(config).parent / "config.pbtxt"
    return TEMPLATE_DIR / MODEL / "config.pbtxt"


def render_config(config: LlmApiRepoConfig) -> str:
    """The release's config.pbtxt text (filled, parsed, edited); RepoError on any problem."""
    release = config.release()
    source = _config_source(config)
    values = {"triton_max_batch_size": 0, "decoupled_mode": bool(config.streaming),
              "llmapi_instance_count": config.instances}
    try:
        filled = fill(source.read_text(), values)
    except FillError as exc:
        raise RepoError(f"{MODEL}/config.pbtxt: {exc}") from None
    except OSError as exc:
        raise RepoError(MSG_CHECKOUT_CONFIG.format(path=source, release=release.key) + f" ({exc.strerror})") from None
    parsed = parse_model_config(filled, f"{MODEL}/config.pbtxt")
    if release.config_from_checkout:
        names = {t.name for t in parsed.input} | {t.name for t in parsed.output}
        if not {"text_input", "text_output"} <= names:
            raise RepoError(MSG_CHECKOUT_CONFIG.format(path=source, release=release.key))
    _edit(parsed, release)
    for key, value in config.parameters.items():
        parsed.parameters[key].string_value = str(value)
    if config.instances > 1:
        parsed.parameters["gpu_device_ids"].string_value = (config.gpu_device_ids or "").replace(" ", "")
    return text_format.MessageToString(parsed)


def find_model_code(config: LlmApiRepoConfig) -> Path:
    """The folder with the release's model.py and helpers.py (GPU repositories)."""
    release = config.release()
    where = Path(config.code_dir or "").expanduser()
    for folder in (where, where / release.model_code):
        if config.code_dir and all((folder / name).is_file() for name in CODE_FILES):
            return folder
    raise RepoError(MSG_CODE.format(files=", ".join(CODE_FILES), repo=release.code_repository,
                                    path=release.model_code, where=config.code_dir or "(none given)"))


def dry_run(config: LlmApiRepoConfig) -> None:
    """Every check the writer makes, without writing: problems, config.pbtxt, model.yaml, the model code."""
    problems = check_config(config)
    if problems:
        raise RepoError(" ".join(problems))
    render_config(config)
    model_yaml_text(config)
    if config.engine == "tensorrtllm":
        find_model_code(config)


def _stage_code(config: LlmApiRepoConfig, version_dir: Path) -> None:
    skip = shutil.ignore_patterns("__pycache__")
    if config.engine == "cpu":
        shutil.copytree(STANDIN_DIR, version_dir, ignore=skip, dirs_exist_ok=True)
        copy_runtime(version_dir, declared_runtime(STANDIN_TEMPLATE).get(MODEL, ()))
        return
    code = find_model_code(config)
    for name in CODE_FILES:
        shutil.copy2(code / name, version_dir / name)


def write_llmapi_repository(config: LlmApiRepoConfig, out: Path, force: bool = False) -> Path:
    """Write the repository into a temporary folder beside `out`, then move it into place."""
    dry_run(config)
    out = Path(out).resolve()
    if out.exists() and not force:
        raise RepoError(MSG_EXISTS.format(out=out))
    with staged_folder(out) as staging:
        version_dir = staging / MODEL / "1"
        version_dir.mkdir(parents=True)
        (staging / MODEL / "config.pbtxt").write_text(render_config(config))
        _stage_code(config, version_dir)
        (version_dir / MODEL_YAML).write_text(model_yaml_text(config))
    return out
