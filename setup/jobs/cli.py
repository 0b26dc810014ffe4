"""`python -m setup plan|build` and the `repo --set KEY=VALUE` flags the plan's repository step uses."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

from setup.catalog.builds import families
from setup.hub.names import hub_defaults
from setup.jobs.messages import MSG_NO_VERSION, MSG_NOT_RESUMABLE
from setup.jobs.registry import EngineRegistry
from setup.jobs.runner import Runner
from setup.jobs.store import JobStore
from setup.plan.config import INT_FIELDS, ConfigError, PlanConfig
from setup.plan.planner import Plan, PlanError, make_plan
from setup.plan.preflight import preflight
from setup.repo.writer import DeploymentConfig, family_deployment


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key.strip(), value


def add_repo_flags(repo: argparse.ArgumentParser) -> None:
    """Let `repo` take its whole config on the command line (what the plan's repository step runs)."""
    repo.add_argument("--family", choices=list(families()), help="Model family: its Triton template and serving "
                      "defaults (e.g. internlm-xcomposer2: template internlm_xcomposer2, LoRA cache 256, batch 32); "
                      "--template, --config and --set win over them.")
    repo.add_argument("--template", help="Template folder in model_repo_templates (default inflight_batcher_llm).")
    repo.add_argument("--engine", help="tensorrtllm (GPU) or cpu.")
    repo.add_argument("--set", dest="set_values", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                      help="A deployment parameter (repeatable); wins over --config.")
    repo.add_argument("--no-streaming", action="store_true", help="Allow decoupled_mode false.")
    repo.add_argument("--trtllm-version", help="TensorRT-LLM release whose tensor names to write (default: the "
                      "templates' own, 0.19).")
    repo.add_argument("--dry-run", action="store_true", help="Check everything that needs no engine files; write "
                      "nothing.")


def repo_config_from_args(args: argparse.Namespace) -> DeploymentConfig:
    config = DeploymentConfig.from_yaml(args.config) if args.config else DeploymentConfig()
    if getattr(args, "family", None):
        template, defaults = family_deployment(args.family)
        if not (args.config and "template" in _yaml_keys(args.config)):
            config.template = template
        config.parameters = {**defaults, **config.parameters}
    if getattr(args, "template", None):
        config.template = args.template
    if getattr(args, "engine", None):
        config.engine = args.engine
    config.parameters.update(dict(getattr(args, "set_values", []) or []))
    if getattr(args, "no_streaming", False):
        config.streaming = False
    if getattr(args, "trtllm_version", None):
        config.trtllm_version = args.trtllm_version
    return config


def _add_plan_flags(parser: argparse.ArgumentParser) -> None:
    helps = PlanConfig.help()
    parser.add_argument("--config", type=Path, help="Build config YAML (same fields as these flags; flags win).")
    parser.add_argument("--deployment", choices=("engine", "trtllm-serve", "llmapi"), default="engine",
                        help="engine: TensorRT engines + Triton (these flags); trtllm-serve: TensorRT-LLM 1.x PyTorch "
                        "backend, no build (`--deployment trtllm-serve --help` lists its flags); llmapi: the same "
                        "backend behind Triton's llmapi model (`--deployment llmapi --help`).")
    for name in PlanConfig.flag_fields():
        kwargs = {"type": int} if name in INT_FIELDS else {}
        if name == "family":
            kwargs["choices"] = list(families())
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=None, help=helps[name], **kwargs)
    parser.add_argument("--triton", dest="triton_values", type=_key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="A Triton deployment parameter (repeatable).")
    parser.add_argument("--extra-convert-args", help="More convert_checkpoint.py arguments (one quoted string).")
    parser.add_argument("--extra-build-args", help="More trtllm-build arguments (one quoted string).")


def add_build_commands(sub) -> None:
    plan = sub.add_parser("plan", help="Print the build plan for a model as a runnable shell script.")
    _add_plan_flags(plan)
    build = sub.add_parser("build", help="Run the build plan (convert, build, visual engine, LoRA, repository, "
                           "launch) with logs and resume.")
    _add_plan_flags(build)
    build.add_argument("--no-launch", action="store_true", help="Stop after writing the repository.")
    build.add_argument("--list-jobs", action="store_true", help="List the Build page's jobs (newest first) and "
                       "which can be resumed, then exit.")
    build.add_argument("--resume", metavar="JOB", help="Run again the plan a cancelled, failed or interrupted "
                       "Build-page job was started with (finished steps are skipped); no other flags needed.")


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    overrides = {n: getattr(args, n) for n in PlanConfig.flag_fields() if getattr(args, n) is not None}
    for name in ("extra_convert_args", "extra_build_args"):
        if getattr(args, name):
            overrides[name] = shlex.split(getattr(args, name))
    if args.config:
        config = PlanConfig.from_yaml(args.config, overrides)
        config.triton = {**(config.triton or {}), **dict(args.triton_values)}
    else:
        config = PlanConfig.from_mapping({**overrides, "triton": dict(args.triton_values)}, where="flags")
    if args.trtllm_version is None and not (args.config and "trtllm_version" in _yaml_keys(args.config)):
        raise ConfigError([MSG_NO_VERSION])
    # A model id without a checkpoint folder or output folder: both named after it, under the current folder.
    return replace(config, **hub_defaults(config.to_mapping(), Path.cwd()))


def _yaml_keys(path: Path) -> set[str]:
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return set()
    return set(raw) if isinstance(raw, dict) else set()


def _plan_or_errors(args: argparse.Namespace, checkpoint_optional: bool = False) -> Plan | None:
    try:
        return make_plan(config_from_args(args), checkpoint_optional)
    except (ConfigError, PlanError) as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return None


def cmd_plan(args: argparse.Namespace) -> int:
    plan = _plan_or_errors(args, checkpoint_optional=True)  # a plan is useful before the download
    if plan is None:
        return 2
    sys.stdout.write(plan.to_shell())
    return 0


def cmd_list_jobs() -> int:
    store = JobStore()
    resumable = {r["id"] for r in store.resumable()}
    for record in store.list():
        mark = "  (--resume " + record["id"] + ")" if record["id"] in resumable else ""
        print(f"{record['id']}  {record['status']}  {record['out']}{mark}")
    return 0


def _resumed_plan(job_id: str) -> Plan | None:
    store = JobStore()
    if job_id not in {r["id"] for r in store.resumable()}:
        print(f"error: {MSG_NOT_RESUMABLE.format(job=job_id)}", file=sys.stderr)
        return None
    try:
        return make_plan(PlanConfig.from_mapping(store.saved_config(job_id) or {}, where=f"job {job_id}"))
    except (ConfigError, PlanError) as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return None


def cmd_build(args: argparse.Namespace) -> int:
    if args.list_jobs:
        return cmd_list_jobs()
    plan = _resumed_plan(args.resume) if args.resume else _plan_or_errors(args)
    if plan is None:
        return 2
    print(f"Triton: {plan.triton_note}", flush=True)
    for warning in plan.warnings + preflight(plan):
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    steps = [s for s in plan.steps if not (args.no_launch and s.phase == "launch")]
    runner = Runner(steps, plan.out, plan.out / "logs" / "build.log", on_output=lambda line: print(line, flush=True))

    def stop(*_args) -> None:
        threading.Thread(target=runner.cancel, daemon=True).start()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        ok = runner.run()
    except KeyboardInterrupt:
        runner.cancel()
        ok = False
    finally:
        signal.signal(signal.SIGTERM, previous)
    registry = EngineRegistry()
    for step, state in zip(runner.steps, runner.states, strict=True):
        if step.phase == "build" and state.status == "done":
            registry.record(Path(step.outputs[0]).parent, plan.family.id, plan.config_hash(), plan.version.text,
                            plan.derived["dtype"], plan.derived["world_size"])
    if not ok:
        print(f"error: {runner.message or 'cancelled'}", file=sys.stderr)
        return 1
    return 0
