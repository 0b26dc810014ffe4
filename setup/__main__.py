"""Command line of the setup layer: `python -m setup repo|launch|lora|plan|build|download ...`."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from setup.cli_types import OneLineErrorParser, port_number, positive_int, raise_interrupt
from setup.hub.cli import add_download_command, cmd_download
from setup.jobs import llmapi_cli, serve_cli
from setup.jobs.cli import add_build_commands, add_repo_flags, cmd_build, cmd_plan, repo_config_from_args
from setup.launcher import LaunchError, LaunchOptions, find_tritonserver, start_triton
from setup.lora.audit_cli import add_audit_command, cmd_audit
from setup.lora.convert import STORAGE_DTYPES, LoraConvertError, describe
from setup.lora.engine import convert_folder
from setup.lora.train_cli import add_train_command, cmd_train
from setup.lora.train_settings import TrainError
from setup.repo.writer import RepoError, dry_run, write_repository


def add_port_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http-port", type=port_number, default=8000, help="Triton HTTP port (default 8000).")
    parser.add_argument("--grpc-port", type=port_number, default=8001, help="Triton gRPC port (default 8001).")
    parser.add_argument("--metrics-port", type=port_number, default=8002, help="Triton metrics port (default 8002).")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="python -m setup", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineErrorParser)

    repo = sub.add_parser("repo", help="Write a Triton model repository from a deployment config.")
    repo.add_argument("--config", type=Path, help="Deployment config YAML (template, engine, parameters).")
    add_repo_flags(repo)
    repo.add_argument("--out", type=Path, required=True, help="Folder to write; it appears only when complete.")
    repo.add_argument("--force", action="store_true", help="Replace --out if it exists.")

    launch = sub.add_parser("launch", help="Run tritonserver on a repository in the foreground (Ctrl-C stops it).")
    launch.add_argument("--repo", type=Path, required=True, help="Model repository folder.")
    add_port_flags(launch)
    launch.add_argument("--world-size", type=positive_int, default=1, help="Ranks (tp x pp); >1 runs under mpirun.")
    launch.add_argument("--no-mpi", action="store_true", help="One tritonserver process without mpirun, whatever "
                        "the world size: Triton's llmapi model with several instances (gpu_device_ids) starts its "
                        "own workers.")
    launch.add_argument("--address", default="127.0.0.1", help="Address to bind (default 127.0.0.1).")
    launch.add_argument("--tritonserver", help="Path of the tritonserver binary (default: $TRITONSERVER, "
                        "/opt/tritonserver/bin/tritonserver, then the nvidia-pytriton wheel).")
    launch.add_argument("--multimodal-gpu0-cuda-mem-pool-bytes", type=int, default=0,
                        help="CUDA memory pool on GPU 0 for multimodal deployments (e.g. 300000000).")
    launch.add_argument("--engine-models", default="tensorrt_llm",
                        help="Comma list of engine models that ranks above 0 load (default tensorrt_llm).")
    launch.add_argument("--cpu-only", action="store_true", help="No GPU: disable pinned memory and GPU metrics.")
    launch.add_argument("--log-file", type=Path, default=Path("triton_log.txt"), help="Server log (default triton_log.txt).")
    launch.add_argument("--ready-timeout", type=float, default=600.0, help="Seconds to wait for readiness.")

    lora = sub.add_parser("lora", help="LoRA adapter tools.")
    lora_sub = lora.add_subparsers(dest="lora_command", required=True)
    convert = lora_sub.add_parser("convert", help="PEFT adapter folder -> model.lora_{weights,config}.npy.")
    convert.add_argument("--in", dest="peft_dir", type=Path, required=True,
                         help="PEFT folder (adapter_config.json + adapter_model.safetensors or .bin).")
    convert.add_argument("--out", type=Path, required=True, help="Folder for the two .npy files.")
    convert.add_argument("--dtype", choices=list(STORAGE_DTYPES), default=None,
                         help="Storage dtype (default: the engine's dtype, else float16). bfloat16 is stored "
                              "as 2-byte raw values (numpy V2), as TensorRT-LLM writes it: NumPy has no bfloat16.")
    convert.add_argument("--engine-dir", type=Path, help="Engine folder whose config.json the adapter is checked "
                         "against (rank, target modules, dtype, model shape).")
    add_train_command(lora_sub)
    add_audit_command(lora_sub)
    add_build_commands(sub)
    add_download_command(sub)
    return parser


def cmd_repo(args: argparse.Namespace) -> int:
    if args.dry_run:
        dry_run(repo_config_from_args(args))
        print(f"Repository config for {args.out} checked (dry run; nothing written).")
        return 0
    out = write_repository(repo_config_from_args(args), args.out, force=args.force)
    print(f"Wrote {out}")
    return 0


def cmd_launch(args: argparse.Namespace) -> int:
    options = LaunchOptions(
        model_repo=args.repo.resolve(), http_port=args.http_port, grpc_port=args.grpc_port,
        metrics_port=args.metrics_port, address=args.address, world_size=args.world_size, no_mpi=args.no_mpi,
        engine_model_names=tuple(n for n in args.engine_models.split(",") if n),
        multimodal_gpu0_cuda_mem_pool_bytes=args.multimodal_gpu0_cuda_mem_pool_bytes, cpu_only=args.cpu_only,
    )
    install = find_tritonserver(args.tritonserver)
    signal.signal(signal.SIGTERM, raise_interrupt)
    process = None
    try:
        process = start_triton(install, options, args.log_file.resolve(), args.ready_timeout,
                               on_start=lambda p: print(" ".join(p.command), flush=True))
        print(f"Ready in {process.ready_seconds:.1f} s: HTTP {args.http_port}, gRPC {args.grpc_port}, "
              f"metrics {args.metrics_port}. Ctrl-C stops it.", flush=True)
        code = process.wait()
        print(f"tritonserver exited with code {code}.\n{process.log_tail()}")
        return 1
    except KeyboardInterrupt:
        print("Stopping tritonserver...")  # start_triton stopped it already when it was still starting
        return 0
    finally:
        if process is not None:
            process.stop()


def cmd_lora(args: argparse.Namespace) -> int:
    if args.lora_command == "train":
        return cmd_train(args)
    if args.lora_command == "audit":
        return cmd_audit(args)
    converted = convert_folder(args.peft_dir, args.out, dtype=args.dtype, engine_dir=args.engine_dir)
    print(f"Wrote {args.out}: {describe(converted)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["plan"], ["build"]) and serve_cli.wants_serve(argv[1:]):  # trtllm-serve deployment kind
        return serve_cli.main(argv[0], argv[1:])
    if argv[:1] in (["plan"], ["build"]) and serve_cli.wants_serve(argv[1:], "llmapi"):  # Triton llmapi kind
        return llmapi_cli.main(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return {"repo": cmd_repo, "launch": cmd_launch, "lora": cmd_lora, "plan": cmd_plan,
                "build": cmd_build, "download": cmd_download}[args.command](args)
    except (RepoError, LaunchError, LoraConvertError, TrainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
