"""Deployment kind "TensorRT-LLM 1.x, Triton `llmapi`": no engine build; the plan writes the llmapi repository
(config.pbtxt of the release, 1/model.yaml with the LLM arguments) and launches Triton on it.

The family must be served by the PyTorch backend (setup/data/pytorch_backend.yaml); what the release's llmapi
model serves (LoRA by path, images, several instances) comes from setup/data/llmapi_releases.yaml.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from setup.catalog import messages as M
from setup.catalog.checkpoint import scan_adapters
from setup.catalog.llmapi_releases import LATEST, LlmApiModelRelease, resolve_llmapi_release
from setup.plan.messages import MSG_CODE_LATER, MSG_FAMILY, MSG_NOT_SERVED
from setup.plan.serve_catalog import ServedFamily, multimodal_options, served_families
from setup.plan.types import LlmApiKnobs, PlanError
from setup.repo.llmapi import (
    LlmApiRepoConfig,
    check_config,
    dry_run,
    model_yaml_text,
    render_config,
    write_llmapi_repository,
)
from setup.repo.writer import RepoError

REPO_FOLDER = "llmapi_repo"


@dataclass
class LlmApiPlanConfig(LlmApiKnobs):
    """What to serve through Triton's llmapi model and how; None leaves the LLM API's default."""

    trtllm_version: str = LATEST
    instances: int = 1
    gpu_device_ids: str | None = None
    code_dir: str | None = None
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002


@dataclass
class LlmApiPlan:
    """The repository to write, the launch command, and what to tell the user."""

    config: LlmApiPlanConfig
    family: ServedFamily
    release: LlmApiModelRelease
    repo: LlmApiRepoConfig
    notes: list[str] = field(default_factory=list)

    @property
    def out(self) -> Path:
        return Path(self.config.out).resolve() / REPO_FOLDER

    def launch_argv(self) -> list[str]:
        c = self.config
        argv = ["python", "-m", "setup", "launch", "--repo", str(self.out), "--http-port", str(c.http_port),
                "--grpc-port", str(c.grpc_port), "--metrics-port", str(c.metrics_port)]
        return argv + (["--no-mpi"] if c.instances > 1 else [])

    def app_argv(self) -> list[str]:
        argv = ["python", "-m", "app", "--triton", f"127.0.0.1:{self.config.grpc_port}", "--deployment", "llmapi",
                "--tokenizer", str(Path(self.config.checkpoint).resolve())]
        return argv + (["--server-adapters-dir", str(Path(self.config.lora_dir).resolve())] if self.repo.lora else [])

    def to_shell(self) -> str:
        lines = ["#!/usr/bin/env bash", "# Triton llmapi plan written by `python -m setup plan --deployment llmapi`.",
                 f"# {self.family.name} on TensorRT-LLM {self.release.key} (PyTorch backend, no engine build).",
                 f"# This release's llmapi model: {self.release.summary()}.",
                 *[f"# {n}" for n in self.notes], "set -euo pipefail",
                 f"# 1. the repository ({self.out}), written by `python -m setup build --deployment llmapi` with:",
                 *[f"#    {line}" for line in model_yaml_text(self.repo).splitlines()],
                 "# 2. Triton on it:", shlex.join(self.launch_argv()),
                 "# 3. the app against it (another shell):", "# " + shlex.join(self.app_argv())]
        return "\n".join(lines) + "\n"

    def summary_lines(self) -> list[str]:
        c = self.config
        return [f"{self.family.name} through Triton's llmapi model (TensorRT-LLM {self.release.key}, PyTorch backend)",
                f"serves: {self.release.summary()}",
                f"{c.instances} instance(s), tp {c.tp} x pp {c.pp}; repository {self.out}"]


def _family(config: LlmApiPlanConfig, problems: list[str]) -> ServedFamily | None:
    family = served_families().get(config.family)
    if family is None:
        choices = ", ".join(f for f, v in served_families().items() if v.since)
        problems.append(MSG_FAMILY.format(family=config.family, choices=choices))
        return None
    if family.since is None:
        problems.append(MSG_NOT_SERVED.format(name=family.name, note=family.note))
    return family


def _lora(config: LlmApiPlanConfig, family: ServedFamily | None, problems: list[str]) -> dict | None:
    if not config.lora_dir:
        return None
    if family is not None and not family.lora:
        problems.append(M.MSG_LORA_UNSUPPORTED.format(family=family.name))
        return None
    if not Path(config.lora_dir).is_dir():
        problems.append(M.MSG_LORA_MISSING.format(path=config.lora_dir))
        return None
    adapters, found = scan_adapters(Path(config.lora_dir))
    problems += found
    if not adapters:
        return None
    rank = config.max_lora_rank or max(a.rank for a in adapters)
    problems += [M.MSG_LORA_RANK.format(name=a.name, rank=a.rank, max_rank=rank) for a in adapters if a.rank > rank]
    modules = sorted({m for a in adapters for m in a.trt_modules}) or list(family.lora_target_modules if family else ())
    return {"lora_target_modules": modules, "max_lora_rank": int(rank), "max_loras": int(config.max_loras or 1),
            "max_cpu_loras": int(config.max_cpu_loras or len(adapters))}


def make_llmapi_plan(config: LlmApiPlanConfig) -> LlmApiPlan:
    """The repository and launch command for `config`; PlanError lists every problem found."""
    problems: list[str] = []
    try:
        release = resolve_llmapi_release(config.trtllm_version)
    except ValueError as exc:
        problems.append(str(exc))
        release = None
    family = _family(config, problems)
    if not config.checkpoint:
        problems.append(M.MSG_NO_CHECKPOINT)
    if not config.out:
        problems.append(M.MSG_NO_OUT)
    lora = _lora(config, family, problems)
    multimodal = family is not None and family.modality == "multimodal"
    block_reuse = config.block_reuse
    if block_reuse is None and multimodal:  # as the release's multimodal examples set it
        block_reuse = (multimodal_options().get("kv_cache_config") or {}).get("enable_block_reuse")
    repo = LlmApiRepoConfig(model=str(Path(config.checkpoint).resolve()) if config.checkpoint else "",
                            trtllm_version=config.trtllm_version, tp=config.tp, pp=config.pp,
                            max_batch_size=config.max_batch_size, max_num_tokens=config.max_num_tokens,
                            max_seq_len=config.max_seq_len, kv_cache_fraction=config.kv_cache_fraction,
                            block_reuse=block_reuse, lora=lora, multimodal=multimodal,
                            instances=config.instances, gpu_device_ids=config.gpu_device_ids,
                            code_dir=config.code_dir)
    if release is not None:
        problems += [p for p in check_config(repo) if p not in problems and "Give the model" not in p]
    if problems or release is None or family is None:
        raise PlanError(problems)
    try:
        render_config(repo)
        model_yaml_text(repo)
    except RepoError as exc:
        raise PlanError([str(exc)]) from None
    notes = [family.note]
    if not config.code_dir and repo.engine == "tensorrtllm":
        notes.append(MSG_CODE_LATER.format(repo=release.code_repository, path=release.model_code))
    if lora:
        notes.append(f"Adapters go per request as lora_id/lora_name/lora_path; the server must read them in "
                     f"{Path(config.lora_dir).resolve()} (the app's --server-adapters-dir).")
    if multimodal:
        notes.append("Images reach the model as image_url data URIs (triton_config.multimodal is on).")
    if config.instances > 1:
        notes.append("Several instances: Triton starts without MPI (--no-mpi); each instance runs on its own GPUs "
                     f"({config.gpu_device_ids}).")
    return LlmApiPlan(config, family, release, repo, notes)


def write_llmapi_plan(plan: LlmApiPlan, force: bool = True) -> Path:
    """Write the plan's repository (every check first; the folder appears whole)."""
    dry_run(plan.repo)
    return write_llmapi_repository(plan.repo, plan.out, force=force)
