"""`python -m setup plan|build --deployment trtllm-serve ...`: print the serve plan, or write it and start the server."""

from __future__ import annotations

import argparse
import shutil
import subprocess

from setup.cli_types import OneLineErrorParser, port_number
from setup.jobs.llm_api_cli_args import add_llm_api_arguments, run_plan_or_build
from setup.jobs.messages import MSG_NOT_INSTALLED
from setup.plan.serve import ServeConfig, make_serve_plan, parse_option, write_serve_files
from setup.plan.serve_catalog import releases

DEPLOYMENTS = ("engine", "trtllm-serve")


def wants_serve(argv: list[str], kind: str = "trtllm-serve") -> bool:
    """True when a plan/build command line asks for the deployment `kind` (trtllm-serve unless told)."""
    for i, arg in enumerate(argv):
        if arg == "--deployment" and i + 1 < len(argv):
            return argv[i + 1] == kind
        if arg.startswith("--deployment="):
            return arg.split("=", 1)[1] == kind
    return False


def _option(text: str) -> tuple[str, object]:
    try:
        return parse_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser(command: str) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog=f"python -m setup {command} --deployment trtllm-serve",
                                description="TensorRT-LLM 1.x trtllm-serve (PyTorch backend): no engine build; the "
                                "plan is the command and its --extra_llm_api_options YAML.")
    parser.add_argument("--deployment", choices=DEPLOYMENTS, required=True, help="trtllm-serve here.")
    parser.add_argument("--family", required=True, help="Model family id (setup/data/pytorch_backend.yaml).")
    parser.add_argument("--checkpoint", required=True, help="Hugging Face checkpoint folder trtllm-serve loads.")
    parser.add_argument("--trtllm-version", required=True,
                        help=f"TensorRT-LLM release: {', '.join(releases())} (patch levels accepted, e.g. 1.2.1).")
    parser.add_argument("--out", required=True, help="Folder for the options YAML and the command script.")
    add_llm_api_arguments(parser, "trtllm-serve's", "Folder of PEFT adapters (or one adapter): lora_config.lora_dir.",
                          ": adapter count")
    parser.add_argument("--lora-target-modules", help="Comma list (default: the adapters' modules).")
    parser.add_argument("--host", default="127.0.0.1", help="Address trtllm-serve binds (default 127.0.0.1).")
    parser.add_argument("--port", type=port_number, default=8000, help="trtllm-serve port (default 8000).")
    parser.add_argument("--option", dest="options", type=_option, action="append", default=[], metavar="KEY=VALUE",
                        help="Another LLM API argument, dotted for nested ones (repeatable); checked per release.")
    if command == "build":
        parser.add_argument("--no-launch", action="store_true", help="Write the files only.")
    return parser


def config_from_args(args: argparse.Namespace) -> ServeConfig:
    modules = [m.strip() for m in (args.lora_target_modules or "").split(",") if m.strip()]
    return ServeConfig(family=args.family, checkpoint=args.checkpoint, trtllm_version=args.trtllm_version,
                       out=args.out, tp=args.tp, pp=args.pp, max_batch_size=args.max_batch_size,
                       max_num_tokens=args.max_num_tokens, max_seq_len=args.max_seq_len,
                       kv_cache_fraction=args.kv_cache_fraction, block_reuse=args.block_reuse,
                       lora_dir=args.lora_dir, max_lora_rank=args.max_lora_rank, max_loras=args.max_loras,
                       max_cpu_loras=args.max_cpu_loras, lora_target_modules=modules, host=args.host,
                       port=args.port, options=dict(args.options))


def find_trtllm_serve() -> str | None:
    return shutil.which("trtllm-serve")


def _show(plan) -> str:
    return f"{plan.to_shell()}# --- {plan.out / 'extra_llm_api_options.yaml'} ---\n{plan.options_yaml()}"


def main(command: str, argv: list[str]) -> int:
    """Entry from setup/__main__.py for `plan` and `build` with --deployment trtllm-serve."""
    return run_plan_or_build(command, argv, build_parser, make_serve_plan, config_from_args, show=_show,
                             build=_build)


def _build(args: argparse.Namespace, plan) -> int:
    options, script = write_serve_files(plan)
    print(f"Wrote {options} and {script}.", flush=True)
    if args.no_launch:
        return 0
    binary = find_trtllm_serve()
    if binary is None:
        print(MSG_NOT_INSTALLED.format(script=script, release=plan.release.release), flush=True)
        return 0
    print(f"Starting {' '.join(plan.argv)} (Ctrl-C stops it); OpenAI API at {plan.url}.", flush=True)
    process = subprocess.Popen([binary, *plan.argv[1:]])  # noqa: S603 - argv list, no shell
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        return 0
