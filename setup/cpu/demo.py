"""The embedded CPU deployment: prepare the model, write the demo repository, start tritonserver.

Each running demo has its own repository, `cache_dir()/demo_repositories/<http>-<grpc>-<metrics>/repo`,
locked by the process that runs it and removed when it stops; a second demo on the same ports fails on
the ports before it writes anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from setup.catalog.families import get_family
from setup.cpu.encoder import build_cpu_encoder
from setup.cpu.engine import CpuEngineSpec, build_cpu_engine
from setup.cpu.family_twins import template_twins, write_family_twin_repository
from setup.cpu.llmapi_demo import write_llmapi_demo_repository
from setup.cpu.messages import MSG_BACKEND_ABORT_RETRY
from setup.cpu.model import model_dir
from setup.cpu.pacing import PacingSpec, add_pacing_model
from setup.cpu.runner_demo import runner_families, write_runner_demo_repository
from setup.cpu.xcomposer2_demo import write_xcomposer2_demo_repository
from setup.launcher import (
    LaunchError,
    LaunchOptions,
    TritonProcess,
    check_ports_free,
    claim_instance_folder,
    find_tritonserver,
    start_triton,
)
from setup.paths import DATA_DIR, cache_dir
from setup.repo.writer import DeploymentConfig, write_repository

DEMO_CONFIG = DATA_DIR / "demo_deployment.yaml"
DEMO_EXIT_TIMEOUT = ("--exit-timeout-secs=5",)
DEMO_PORT_FLAG = "--triton-{kind}-port"  # `python -m app --demo` flags
# the demo repositories start_demo_triton writes without a family: the engine topology (`python -m app --demo`),
# Triton llmapi (`--demo --deployment llmapi`: a server kind) or the InternLM-XComposer2 twin (`--demo --twin xcomposer2`)
DEPLOYMENTS = ("engine", "llmapi", "xcomposer2")


def demo_instances_dir() -> Path:
    """Where running demos keep their own repositories (one folder per port triple)."""
    return cache_dir() / "demo_repositories"


def demo_config(engine: Path, overrides: dict | None = None, encoder: Path | None = None) -> DeploymentConfig:
    config = DeploymentConfig.from_yaml(DEMO_CONFIG)
    config.parameters.update(engine_dir=str(engine), tokenizer_dir=str(model_dir()))
    if encoder is not None:
        config.parameters.update(multimodal_model_path=str(encoder), hf_model_path=str(model_dir()))
    config.parameters.update(overrides or {})
    return config


def write_demo_repository(out: Path, overrides: dict | None = None, log=print,
                          pacing_rate: float | None = None) -> Path:
    """Prepare the CPU engine and OCR encoder, (re)write the demo repository at `out`; return its path.

    With `pacing_rate` (tokens per second) the benchmark pacing model is added beside the demo's models.

    The engine's prompt table is sized exactly max_batch_size x visual tokens per image x
    max_num_images of the demo's image family, as a TensorRT-LLM build must be.
    """
    parameters = {**DeploymentConfig.from_yaml(DEMO_CONFIG).parameters, **(overrides or {})}
    family = get_family(str(parameters["multimodal_family"])) if parameters.get("multimodal_family") else None
    spec = CpuEngineSpec()
    if family is not None:
        images = int(parameters.get("max_num_images") or family.max_num_images)
        table = spec.max_batch_size * family.visual_tokens_per_image * images
        spec = CpuEngineSpec(max_prompt_embedding_table_size=table)
    engine = build_cpu_engine(spec, log=log)
    encoder = None
    if family is not None:
        hidden = json.loads((engine / "config.json").read_text())["pretrained_config"]["hidden_size"]
        encoder = build_cpu_encoder(family, images, hidden)
    repo = write_repository(demo_config(engine, overrides, encoder), Path(out), force=True)
    if pacing_rate is not None:
        add_pacing_model(repo, PacingSpec(tokens_per_second=pacing_rate))
    return repo


# What tritonserver prints when its Python backend aborts while launching the stubs: an intermittent upstream fault
# (triton-inference-server/server#8882), seen beside a busy core 15 ms after a twin's stubs were launched. The same
# start a second time works; any other failure is raised as it is.
BACKEND_ABORT = "boost::interprocess::lock_exception"


def start_once_more_after_an_abort(start: Callable[[], TritonProcess], log: Callable[[str], object]) -> TritonProcess:
    """start(), and once more if tritonserver aborted with the backend's intermittent fault (BACKEND_ABORT)."""
    try:
        return start()
    except LaunchError as exc:
        if BACKEND_ABORT not in str(exc):
            raise
        log(MSG_BACKEND_ABORT_RETRY)
        return start()


def start_demo_triton(http_port: int = 8000, grpc_port: int = 8001, metrics_port: int = 8002,
                      repo: Path | None = None, log_path: Path | None = None, log=print,
                      ready_timeout: float = 180.0, pacing_rate: float | None = None,
                      port_flag: str | None = DEMO_PORT_FLAG, deployment: str = "engine") -> TritonProcess:
    """Start tritonserver on the CPU with the demo repository; returns once it is ready.

    The ports are checked first (LaunchError naming a taken one; `port_flag` is the advice). Without
    `repo`, the demo repository (with the pacing model when `pacing_rate` is given) is written into
    this instance's own folder, which stop() removes. `deployment` picks the demo repository (DEPLOYMENTS) or names a
    family (its runner twin, or its template twin: setup/cpu/family_twins.py); `python -m app --demo` passes its
    --twin here, or llmapi for --deployment llmapi.
    """
    options = LaunchOptions(model_repo=Path(repo or "."), http_port=http_port, grpc_port=grpc_port,
                            metrics_port=metrics_port, cpu_only=True, extra_args=DEMO_EXIT_TIMEOUT)
    check_ports_free(options, port_flag)  # before anything is written: a busy port touches nothing
    folder = None
    try:
        if repo is None:
            folder = claim_instance_folder(demo_instances_dir(), f"{http_port}-{grpc_port}-{metrics_port}")
            if deployment in runner_families():  # a family only run.py served: its runner twin
                repo = write_runner_demo_repository(folder.path / "repo", deployment, log=log, pacing_rate=pacing_rate)
            elif deployment in template_twins():  # a family the backend's own templates serve: its twin
                repo = write_family_twin_repository(folder.path / "repo", deployment, log=log, pacing_rate=pacing_rate)
            else:
                writer = {"llmapi": write_llmapi_demo_repository,
                          "xcomposer2": write_xcomposer2_demo_repository}.get(deployment, write_demo_repository)
                repo = writer(folder.path / "repo", log=log, pacing_rate=pacing_rate)
        log_path = log_path or cache_dir() / "logs" / f"triton-{http_port}.log"
        process = start_once_more_after_an_abort(lambda: start_triton(
            find_tritonserver(), replace(options, model_repo=Path(repo)), log_path, ready_timeout,
            port_flag=port_flag,
            on_start=lambda p: log(f"Starting tritonserver (gRPC 127.0.0.1:{grpc_port}, log {p.log_path})..."),
        ), log)
    except BaseException:
        if folder is not None:
            folder.release()
        raise
    if folder is not None:
        process.add_cleanup(folder.release)
    log(f"tritonserver ready in {process.ready_seconds:.1f} s")
    return process
