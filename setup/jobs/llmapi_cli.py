"""`python -m setup plan|build --deployment llmapi ...`: print the Triton llmapi plan, or write the repository and
run Triton on it in the foreground (Ctrl-C stops it)."""

from __future__ import annotations

import argparse
import signal
import sys

from setup.catalog.llmapi_releases import LATEST, llmapi_releases
from setup.cli_types import OneLineErrorParser, port_number, positive_int, raise_interrupt
from setup.jobs.llm_api_cli_args import add_llm_api_arguments, run_plan_or_build
from setup.launcher import LaunchError, LaunchOptions, check_ports_free, find_tritonserver, start_triton
from setup.plan.llmapi import LlmApiPlan, LlmApiPlanConfig, make_llmapi_plan, write_llmapi_plan
from setup.repo.llmapi import model_yaml_text
from setup.repo.writer import RepoError

RELEASE_HELP = "; ".join(f"{key}: {r.summary()}" for key, r in llmapi_releases().items())


def build_parser(command: str) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog=f"python -m setup {command} --deployment llmapi",
                                description="TensorRT-LLM 1.x PyTorch backend behind Triton's Python llmapi model: no "
                                "engine build; the plan writes the repository (config.pbtxt + 1/model.yaml) and "
                                "launches Triton.")
    parser.add_argument("--deployment", choices=("llmapi",), required=True, help="llmapi here.")
    parser.add_argument("--family", required=True, help="Model family id (setup/data/pytorch_backend.yaml).")
    parser.add_argument("--checkpoint", required=True, help="Hugging Face checkpoint folder the server loads.")
    parser.add_argument("--trtllm-version", default=LATEST, help=f"TensorRT-LLM release ({RELEASE_HELP}).")
    parser.add_argument("--out", required=True, help="Folder for the repository (written as OUT/llmapi_repo).")
    parser.add_argument("--code-dir", help="Folder holding the release's llmapi model.py and helpers.py, or a "
                        "checkout of the release (they are TensorRT-LLM's code; `build` copies them).")
    add_llm_api_arguments(parser, "the LLM API's", "Folder of PEFT adapters the server reads by path (lora_path).",
                          " 1")
    parser.add_argument("--instances", type=positive_int, default=1, help="Model instances (default 1).")
    parser.add_argument("--gpu-device-ids", help='GPUs per instance, e.g. "0,1;2,3" (with --instances > 1).')
    parser.add_argument("--http-port", type=port_number, default=8000, help="Triton HTTP port (default 8000).")
    parser.add_argument("--grpc-port", type=port_number, default=8001, help="Triton gRPC port (default 8001).")
    parser.add_argument("--metrics-port", type=port_number, default=8002, help="Triton metrics port (default 8002).")
    if command == "build":
        parser.add_argument("--no-launch", action="store_true", help="Write the repository only.")
    return parser


def config_from_args(args: argparse.Namespace) -> LlmApiPlanConfig:
    names = ("family", "checkpoint", "trtllm_version", "out", "code_dir", "tp", "pp", "max_batch_size",
             "max_num_tokens", "max_seq_len", "kv_cache_fraction", "block_reuse", "lora_dir", "max_lora_rank",
             "max_loras", "max_cpu_loras", "instances", "gpu_device_ids", "http_port", "grpc_port", "metrics_port")
    return LlmApiPlanConfig(**{name: getattr(args, name) for name in names})


def _launch(plan: LlmApiPlan) -> int:
    c = plan.config
    options = LaunchOptions(model_repo=plan.out, http_port=c.http_port, grpc_port=c.grpc_port,
                            metrics_port=c.metrics_port, no_mpi=c.instances > 1)
    signal.signal(signal.SIGTERM, raise_interrupt)
    process = None
    try:
        process = start_triton(find_tritonserver(), options, plan.out.parent / "triton_log.txt", 1800.0,
                               on_start=lambda p: print(" ".join(p.command), flush=True))
        print(f"Ready in {process.ready_seconds:.1f} s; chat with: {' '.join(plan.app_argv())}", flush=True)
        code = process.wait()
        print(f"tritonserver exited with code {code}.\n{process.log_tail()}")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if process is not None:
            process.stop()


def _build(args: argparse.Namespace, plan) -> int:
    try:
        if not args.no_launch:  # a busy port stops the build before anything is written
            check_ports_free(LaunchOptions(model_repo=plan.out, http_port=args.http_port, grpc_port=args.grpc_port,
                                           metrics_port=args.metrics_port))
        out = write_llmapi_plan(plan)
        print(f"Wrote {out} (TensorRT-LLM {plan.release.key}: {plan.release.summary()}).", flush=True)
        print(model_yaml_text(plan.repo), flush=True)
        return 0 if args.no_launch else _launch(plan)
    except (RepoError, LaunchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def main(command: str, argv: list[str]) -> int:
    """Entry from setup/__main__.py for `plan` and `build` with --deployment llmapi."""
    return run_plan_or_build(command, argv, build_parser, make_llmapi_plan, config_from_args,
                             show=lambda plan: plan.to_shell(), build=_build)
