"""Deployment kind "TensorRT-LLM 1.x, trtllm-serve": no engine build, the plan is one command plus its options YAML.

Every key of the `--extra_llm_api_options` YAML (and every flag of the command) is checked against the
names recorded for the chosen release (setup/plan/serve_catalog.py); the files are written atomically.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from setup.catalog import messages as M
from setup.catalog.checkpoint import scan_adapters
from setup.plan.messages import (
    MSG_FRACTION,
    MSG_LORA_OPTION,
    MSG_OPTION,
    MSG_PORT,
    MSG_SERVE_FAMILY,
    MSG_SERVE_NOT_SERVED,
)
from setup.plan.serve_catalog import (
    LlmApiRelease,
    ServedFamily,
    multimodal_options,
    resolve_release,
    served_families,
)
from setup.plan.types import LlmApiKnobs, PlanError

OPTIONS_FILE = "extra_llm_api_options.yaml"
SCRIPT_FILE = "trtllm-serve.sh"


@dataclass
class ServeConfig(LlmApiKnobs):
    """What to serve and how. None means "trtllm-serve's own default" (the key is left out of the YAML)."""

    trtllm_version: str = "1.2"
    lora_target_modules: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 8000
    options: dict = field(default_factory=dict)  # more LLM API keys, dotted for nested ones


@dataclass
class ServePlan:
    """The trtllm-serve command, its options, and what to tell the user."""

    config: ServeConfig
    family: ServedFamily
    release: LlmApiRelease
    options: dict
    argv: list[str]
    notes: list[str]
    warnings: list[str]

    @property
    def out(self) -> Path:
        return Path(self.config.out).resolve()

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}/v1"

    def options_yaml(self) -> str:
        source = self.release.source
        head = (f"# --extra_llm_api_options for trtllm-serve, TensorRT-LLM {self.release.release}; every key is in the "
                f"names recorded from {source['repo']} {source['tag']} (setup/data/llm_api/{self.release.release}.yaml).\n")
        return head + yaml.safe_dump(self.options, sort_keys=False)

    def to_shell(self) -> str:
        lines = ["#!/usr/bin/env bash", "# trtllm-serve plan written by `python -m setup plan --deployment trtllm-serve`.",
                 f"# {self.family.name} on TensorRT-LLM {self.release.release} (PyTorch backend, no engine build).",
                 *[f"# {n}" for n in self.notes], *[f"# Warning: {w}" for w in self.warnings],
                 "set -euo pipefail", shlex.join(self.argv)]
        return "\n".join(lines) + "\n"

    def summary_lines(self) -> list[str]:
        c = self.config
        return [f"{self.family.name} with trtllm-serve (TensorRT-LLM {self.release.release}, PyTorch backend)",
                f"world size {c.tp * c.pp} (tp {c.tp} x pp {c.pp}); OpenAI API at {self.url}",
                f"options YAML: {len(_flat_keys(self.options))} keys, all recorded for {self.release.tag}"]


def parse_option(text: str) -> tuple[str, object]:
    """'kv_cache_config.enable_partial_reuse=false' -> (dotted key, YAML value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(MSG_OPTION.format(text=text))
    try:
        return key.strip(), yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        raise ValueError(MSG_OPTION.format(text=text)) from None


def _flat_keys(options: dict, prefix: str = "") -> list[str]:
    keys = []
    for key, value in options.items():
        keys.append(prefix + key)
        if isinstance(value, dict):
            keys += _flat_keys(value, f"{prefix}{key}.")
    return keys


def _merge(options: dict, extra: dict) -> None:
    for dotted, value in extra.items():
        *parents, last = dotted.split(".")
        node = options
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            if isinstance(value, dict) and isinstance(node.get(last), dict):
                node[last].update(value)
            else:
                node[last] = value


class _Checks:
    """Collects every problem of a ServeConfig (one sentence each)."""

    def __init__(self, config: ServeConfig):
        self.c, self.problems, self.warnings = config, [], []

    def family(self, release: LlmApiRelease | None) -> ServedFamily | None:
        family = served_families().get(self.c.family)
        if family is None:
            choices = ", ".join(f for f, v in served_families().items() if v.since)
            self.problems.append(MSG_SERVE_FAMILY.format(family=self.c.family, choices=choices))
            return None
        if release is not None and not family.served_at(release.release):
            self.problems.append(MSG_SERVE_NOT_SERVED.format(name=family.name, release=release.release, note=family.note))
        return family

    def numbers(self) -> None:
        c = self.c
        for name in ("tp", "pp", "max_batch_size", "max_num_tokens", "max_seq_len", "max_lora_rank", "max_loras",
                     "max_cpu_loras"):
            value = getattr(c, name)
            if value is not None and int(value) < 1:
                self.problems.append(M.MSG_POSITIVE.format(name=name, value=value))
        if c.kv_cache_fraction is not None and not 0 < float(c.kv_cache_fraction) <= 1:
            self.problems.append(MSG_FRACTION.format(value=c.kv_cache_fraction))
        if not 1 <= int(c.port) <= 65535:
            self.problems.append(MSG_PORT.format(value=c.port))

    def paths(self) -> None:
        c = self.c
        if not c.checkpoint:
            self.problems.append(M.MSG_NO_CHECKPOINT)
        elif not Path(c.checkpoint).exists():
            self.problems.append(M.MSG_CHECKPOINT_MISSING.format(path=c.checkpoint))
        if not c.out:
            self.problems.append(M.MSG_NO_OUT)

    def lora(self, family: ServedFamily | None) -> dict | None:
        c = self.c
        if not c.lora_dir:
            for name in ("max_lora_rank", "max_loras", "max_cpu_loras"):
                if getattr(c, name) is not None:
                    self.problems.append(MSG_LORA_OPTION.format(name=name))
            return None
        if family is not None and not family.lora:
            self.problems.append(M.MSG_LORA_UNSUPPORTED.format(family=family.name))
            return None
        if not Path(c.lora_dir).is_dir():
            self.problems.append(M.MSG_LORA_MISSING.format(path=c.lora_dir))
            return None
        adapters, problems = scan_adapters(Path(c.lora_dir))
        self.problems += problems
        if not adapters:
            return None
        largest = max(a.rank for a in adapters)
        rank = c.max_lora_rank or largest
        self.problems += [M.MSG_LORA_RANK.format(name=a.name, rank=a.rank, max_rank=rank)
                          for a in adapters if a.rank > rank]
        modules = list(c.lora_target_modules) or sorted({m for a in adapters for m in a.trt_modules}) \
            or list(family.lora_target_modules if family else ())
        count = len(adapters)
        return {"lora_dir": [str(a.path.resolve()) for a in adapters], "max_lora_rank": int(rank),
                "max_loras": int(c.max_loras or count), "max_cpu_loras": int(c.max_cpu_loras or count),
                "lora_target_modules": modules}


def _options(config: ServeConfig, family: ServedFamily, lora: dict | None) -> dict:
    c = config
    options: dict = {"tensor_parallel_size": int(c.tp), "pipeline_parallel_size": int(c.pp)}
    for name in ("max_batch_size", "max_num_tokens", "max_seq_len"):
        if getattr(c, name) is not None:
            options[name] = int(getattr(c, name))
    kv: dict = {}
    if c.kv_cache_fraction is not None:
        kv["free_gpu_memory_fraction"] = float(c.kv_cache_fraction)
    if family.modality == "multimodal":
        kv.update(multimodal_options().get("kv_cache_config") or {})
    if c.block_reuse is not None:
        kv["enable_block_reuse"] = bool(c.block_reuse)
    if kv:
        options["kv_cache_config"] = kv
    if lora:
        options["lora_config"] = lora
    _merge(options, family.llm_api_options)
    _merge(options, dict(c.options))
    return options


def make_serve_plan(config: ServeConfig) -> ServePlan:
    """The trtllm-serve command and options for `config`; PlanError lists every problem found."""
    checks = _Checks(config)
    try:
        release = resolve_release(config.trtllm_version)
    except ValueError as exc:
        checks.problems.append(str(exc))
        release = None
    family = checks.family(release)
    checks.numbers()
    checks.paths()
    lora = checks.lora(family)
    if release is None or family is None or checks.problems:
        raise PlanError(checks.problems)
    options = _options(config, family, lora)
    options_path = str(Path(config.out).resolve() / OPTIONS_FILE)
    argv = ["trtllm-serve", str(Path(config.checkpoint).resolve()), "--backend", "pytorch", "--host", config.host,
            "--port", str(config.port), "--extra_llm_api_options", options_path]
    problems = release.key_problems(options) + release.flag_problems(argv)
    if problems:
        raise PlanError(problems)
    notes = [family.note]
    if not release.verified_at_tag:
        notes.append(f"The argument names of {release.tag} were recorded from stored upstream versions near the "
                     "tag, not from the tag itself (setup/data/llm_api/); keys outside them are refused.")
    if family.modality == "multimodal":
        notes.append("Images reach trtllm-serve as image_url content parts of /v1/chat/completions.")
    if lora:
        notes.append("Adapters are chosen per request with lora_request {lora_name, lora_int_id, lora_path}.")
    return ServePlan(config, family, release, options, argv, notes, checks.warnings)


def _write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_serve_files(plan: ServePlan) -> tuple[Path, Path]:
    """Write the options YAML and the command script into the plan's folder (each file appears whole)."""
    out = plan.out
    out.mkdir(parents=True, exist_ok=True)
    options, script = out / OPTIONS_FILE, out / SCRIPT_FILE
    _write_atomic(options, plan.options_yaml())
    _write_atomic(script, plan.to_shell(), 0o755)
    return options, script
