"""The build/deployment config the planner reads: YAML keys and command-line flags are the same fields."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from setup.catalog.messages import (
    MSG_CONFIG_MAPPING,
    MSG_CONFIG_MISSING,
    MSG_CONFIG_YAML,
    MSG_NOT_A_NUMBER,
    MSG_UNKNOWN_KEYS,
)


class ConfigError(ValueError):
    """The config file or a flag value cannot be read; `problems` holds one message each."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _f(default, help_text: str, flag: bool = True):
    metadata = {"help": help_text, "flag": flag}
    if default in (list, dict):
        return field(default_factory=default, metadata=metadata)
    return field(default=default, metadata=metadata)


INT_FIELDS = ("tp", "pp", "max_batch_size", "max_input_len", "max_seq_len", "max_num_images", "max_num_tokens",
              "max_lora_rank", "http_port", "grpc_port", "metrics_port")


@dataclass
class PlanConfig:
    """What to build and deploy. None means "the family's default"."""

    family: str = _f("", "Model family id (setup/data/families/<family>.yaml).")
    checkpoint: str = _f("", "Hugging Face checkpoint folder (a .nemo file for NeMo families). With --model-id the "
                         "folder the model is downloaded into (default: models/ORG--NAME under the current folder).")
    model_id: str | None = _f(None, "Hugging Face model id (ORG/NAME) the plan's first step downloads (token: "
                              "$HF_TOKEN); the later steps read the downloaded folder.")
    revision: str | None = _f(None, "Branch, tag or commit of the model id (default main).")
    trtllm_version: str = _f("0.19", "TensorRT-LLM version the commands are written for (0.11 ... 0.19+).")
    out: str = _f("", "Output folder: converted checkpoint, engines, repository, logs, build state.")
    dtype: str | None = _f(None, "Weights dtype (float16, bfloat16, float32); default: the family's.")
    tp: int = _f(1, "Tensor parallelism (must divide the attention heads).")
    pp: int = _f(1, "Pipeline parallelism. World size = tp x pp.")
    max_batch_size: int | None = _f(None, "Largest batch the engine runs.")
    max_input_len: int | None = _f(None, "Longest prompt in tokens, visual tokens included.")
    max_seq_len: int | None = _f(None, "Longest prompt plus reply in tokens.")
    max_num_images: int | None = _f(None, "Images per request (sets the multimodal length).")
    max_num_tokens: int | None = _f(None, "Tokens per engine iteration (default: TensorRT-LLM's).")
    lora_dir: str | None = _f(None, "Folder of PEFT adapters (or one adapter) to serve.")
    max_lora_rank: int | None = _f(None, "Largest LoRA rank the engine takes (default: the adapters' largest).")
    tokenizer_dir: str | None = _f(None, "Tokenizer folder for Triton (default: the checkpoint).")
    vila_path: str | None = _f(None, "Clone of the VILA repository (VILA only).")
    trtllm_root: str = _f(os.environ.get("TRTLLM_ROOT", "TensorRT-LLM"),
                          "TensorRT-LLM source tree with examples/ (default: $TRTLLM_ROOT or ./TensorRT-LLM).")
    trtllm_build: str = _f("trtllm-build", "trtllm-build executable.")
    trtllm_python: str = _f("python3", "Python that has tensorrt_llm installed (runs the example scripts).")
    http_port: int = _f(8000, "Triton HTTP port.")
    grpc_port: int = _f(8001, "Triton gRPC port.")
    metrics_port: int = _f(8002, "Triton metrics port.")
    extra_convert_args: list[str] = _f(list, "More convert_checkpoint.py arguments.", flag=False)
    extra_build_args: list[str] = _f(list, "More trtllm-build arguments.", flag=False)
    triton: dict[str, object] = _f(dict, "Triton deployment parameters (setup/data/repo_parameters.yaml).",
                                   flag=False)

    @classmethod
    def help(cls) -> dict[str, str]:
        return {f.name: f.metadata["help"] for f in fields(cls)}

    @classmethod
    def flag_fields(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.metadata["flag"]]

    @classmethod
    def from_mapping(cls, raw: dict, where: str = "config") -> PlanConfig:
        """Build from a mapping (YAML or form values); whole numbers are checked, all problems collected."""
        names = {f.name for f in fields(cls)}
        problems = []
        unknown = sorted(set(raw) - names)
        if unknown:
            problems.append(MSG_UNKNOWN_KEYS.format(where=where, keys=", ".join(unknown)))
        values = {}
        for key, value in raw.items():
            if key not in names:
                continue
            if key in INT_FIELDS and value not in (None, ""):
                try:
                    if isinstance(value, float) and not value.is_integer():
                        raise ValueError
                    value = int(value)
                except (TypeError, ValueError):
                    problems.append(MSG_NOT_A_NUMBER.format(name=key, value=value))
                    continue
            elif value == "" and key not in ("family", "checkpoint", "out"):
                value = None
            values[key] = value
        if problems:
            raise ConfigError(problems)
        for key in ("extra_convert_args", "extra_build_args"):
            if isinstance(values.get(key), str):
                values[key] = values[key].split()
        for key in ("tp", "pp"):
            if values.get(key) is None:
                values.pop(key, None)
        return cls(**values)

    @classmethod
    def from_yaml(cls, path: Path, overrides: dict | None = None) -> PlanConfig:
        """Read a config YAML; `overrides` (e.g. command-line flags) win over its values."""
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise ConfigError([MSG_CONFIG_MISSING.format(path=path)]) from None
        except yaml.YAMLError as exc:
            raise ConfigError([MSG_CONFIG_YAML.format(path=path, reason=exc)]) from None
        if not isinstance(raw, dict):
            raise ConfigError([MSG_CONFIG_MAPPING.format(path=path)])
        return cls.from_mapping({**raw, **(overrides or {})}, where=str(path))

    def to_mapping(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
