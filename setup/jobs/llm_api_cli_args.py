"""Command-line options (and plan errors) both engine-free deployments share: what they pass to TensorRT-LLM's LLM API (trtllm-serve's options
YAML, the llmapi model's model.yaml): parallelism, batch and sequence sizes, KV cache, LoRA."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from setup.cli_types import positive_int
from setup.plan.types import PlanError


def fraction(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None


def true_or_false(text: str) -> bool:
    if text.lower() in ("true", "yes", "1", "on"):
        return True
    if text.lower() in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def add_llm_api_arguments(parser: argparse.ArgumentParser, server: str, lora_dir_help: str,
                          max_loras_default: str) -> None:
    """The shared LLM API options; `server` names whose defaults apply ("trtllm-serve's", "the LLM API's")."""
    parser.add_argument("--tp", type=positive_int, default=1, help="tensor_parallel_size (default 1).")
    parser.add_argument("--pp", type=positive_int, default=1, help="pipeline_parallel_size (default 1).")
    parser.add_argument("--max-batch-size", type=positive_int, help=f"max_batch_size (default: {server}).")
    parser.add_argument("--max-num-tokens", type=positive_int, help=f"max_num_tokens (default: {server}).")
    parser.add_argument("--max-seq-len", type=positive_int, help="max_seq_len (default: the model's).")
    parser.add_argument("--kv-cache-fraction", type=fraction,
                        help="kv_cache_config.free_gpu_memory_fraction, above 0 and at most 1.")
    parser.add_argument("--block-reuse", type=true_or_false,
                        help="kv_cache_config.enable_block_reuse (true/false).")
    parser.add_argument("--lora-dir", help=lora_dir_help)
    parser.add_argument("--max-lora-rank", type=positive_int, help="lora_config.max_lora_rank (default: largest).")
    parser.add_argument("--max-loras", type=positive_int, help=f"lora_config.max_loras (default{max_loras_default}).")
    parser.add_argument("--max-cpu-loras", type=positive_int, help="lora_config.max_cpu_loras (default: count).")


def plan_or_errors(make_plan, config):
    """`make_plan(config)`, or None after printing each problem as one `error:` line on stderr."""
    try:
        return make_plan(config)
    except PlanError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return None


def run_plan_or_build(command: str, argv: list[str], build_parser: Callable[[str], argparse.ArgumentParser],
                      make_plan: Callable, config_from_args: Callable, show: Callable[[object], str],
                      build: Callable[[argparse.Namespace, object], int]) -> int:
    """Both engine-free CLIs' `plan` and `build`: parse `argv`, make the plan (2 after its `error:` lines), then print
    `show(plan)` for `plan` or return `build(args, plan)` for `build`."""
    args = build_parser(command).parse_args(argv)
    plan = plan_or_errors(make_plan, config_from_args(args))
    if plan is None:
        return 2
    if command == "plan":
        sys.stdout.write(show(plan))
        return 0
    return build(args, plan)
