"""Command line of the app.

    python -m app --demo [--port 7860] [--triton-http-port 8000 ...]   embedded CPU Triton + UI
    python -m app --demo --twin FAMILY                                   a family's CPU twin (e.g. kosmos-2) + UI
    python -m app --triton HOST:GRPC_PORT [--port 7860]                  UI against a running server
    python -m app --openai URL [--api-key-file FILE] [--model NAME]      UI against an OpenAI-compatible server
        (vLLM, SGLang, NIM, trtllm-serve, a Dynamo frontend, or this app's own /v1)
    python -m app bench ... / python -m app compare ...                  load benchmark / the Compare tab's job
    python -m app arena leaderboard|export [--db URL]                    the Arena's leaderboard / its votes
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading

from app.cli.messages import (
    MSG_DEMO_RUNNER_NEEDS_TWIN,
    MSG_TWIN_IS_NOT_A_KIND,
    MSG_TWIN_KIND_CONFLICT,
    MSG_TWIN_WITHOUT_DEMO,
)
from app.context import AppConfig, AppContext
from app.core.constants import LLMAPI_MODEL, SUPPORTED_MODELS
from app.core.errors import ChatError
from app.deployments.connect import DEPLOYMENTS, read_api_key
from app.deployments.openai_compat.deployment import ADAPTERS_AS
from setup.cli_types import (
    OneLineErrorParser,
    host_port,
    http_url,
    login_file,
    port_number,
    positive_float,
    positive_int,
    raise_interrupt,
)
from setup.cpu.family_twins import template_twins
from setup.cpu.runner_demo import runner_families
from setup.paths import keep_scratch_in_cache
from setup.workspace import WorkspaceError, check_root

HELP = AppConfig.help()
# --demo --twin NAME picks the CPU demo repository; the server kind is --deployment's (DEPLOYMENTS), never a twin
DEFAULT_TWIN = "engine"  # --demo alone: the CPU engine topology (SmolLM2-135M with the OCR encoder)
XCOMPOSER2_DEMO = "xcomposer2"  # --demo --twin xcomposer2: the InternLM-XComposer2 twin (the engine kind serves it)
# --demo --twin <family>: the runner twin of a family only TensorRT-LLM's run.py served (the runner kind)
RUNNER_TWINS = runner_families()  # from the family files (triton.topology: runner)
RUNNER_MODEL = "multimodal_runner"
# --demo --twin <family>: the twin of a family the backend's own templates serve (the engine kind)
TEMPLATE_TWINS = template_twins()  # from the family files (triton.template: multimodal or inflight_batcher_llm)
TWINS = (DEFAULT_TWIN, XCOMPOSER2_DEMO, *RUNNER_TWINS, *TEMPLATE_TWINS)


def twin_kind(twin: str) -> str:
    """The server kind a CPU twin is served as: runner for the runner twins, engine for the others."""
    return "runner" if twin in RUNNER_TWINS else "engine"


def _deployment_kind(text: str) -> str:
    """A server kind for --deployment; a twin's name is refused with the sentence naming --twin."""
    if text in TWINS and text not in DEPLOYMENTS:
        raise argparse.ArgumentTypeError(MSG_TWIN_IS_NOT_A_KIND.format(
            twin=text, kinds=", ".join(DEPLOYMENTS[:-1]) + f" or {DEPLOYMENTS[-1]}"))
    return text


def _workspace_root(text: str) -> str:
    try:
        return str(check_root(text))
    except WorkspaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _host_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in text.split(",") if n.strip())
    bad = [n for n in names if not re.fullmatch(r"[a-z0-9.\-]+|\[[0-9a-f:.]+\]", n)]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of host names (no ports, no '*')")
    return names


def _model_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.\-/:]+", text):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a model name (letters, digits, _ . -; e.g. {', '.join(SUPPORTED_MODELS)})")
    return text


def _readable_file(text: str) -> str:
    try:
        read_api_key(text)
    except ChatError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="python -m app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--demo", action="store_true",
                       help="Start the embedded tritonserver with the CPU engine (SmolLM2-135M), then the UI.")
    where.add_argument("--triton", type=host_port, metavar="HOST:GRPC_PORT",
                       help="Serve the UI against an existing Triton server's gRPC endpoint.")
    where.add_argument("--openai", type=http_url, metavar="URL", help=HELP["openai_url"])
    parser.add_argument("--api-key-file", type=_readable_file, metavar="FILE", help=HELP["api_key_file"])
    parser.add_argument("--adapters-as", choices=ADAPTERS_AS, help=HELP["adapters_as"])
    parser.add_argument("--deployment", type=_deployment_kind, choices=DEPLOYMENTS, default=None,
                        help=HELP["deployment"] + " Or 'runner' (TensorRT-LLM's run.py in one Python model). Default "
                        "engine; with --demo --twin NAME, the twin's kind; --demo --deployment llmapi serves the CPU "
                        "demo of Triton's llmapi model. A CPU twin is picked with --twin, not here.")
    parser.add_argument("--twin", choices=TWINS, default=None, metavar="NAME",
                        help=f"--demo: which CPU demo repository to serve (default {DEFAULT_TWIN}: the CPU engine "
                        f"topology; {XCOMPOSER2_DEMO}: the InternLM-XComposer2 topology's CPU twin, served as the "
                        "engine kind; a family name such as kosmos-2: that family's runner twin, served as the "
                        "runner kind; such as llava-1.5 or llama: that family's twin in its own template, served as "
                        f"the engine kind). One of: {', '.join(TWINS)}.")
    parser.add_argument("--model-adapter", metavar="NAME", help=HELP["model_adapter"])
    parser.add_argument("--server-adapters-dir", metavar="FOLDER", help=HELP["server_adapters_dir"])
    parser.add_argument("--port", type=port_number, default=AppConfig.port, help=HELP["port"] + " (default 7860)")
    parser.add_argument("--host", default=AppConfig.host, help=HELP["host"] + " (default 127.0.0.1)")
    parser.add_argument("--triton-http-port", type=port_number, default=8000, help="--demo: Triton HTTP port (default 8000).")
    parser.add_argument("--triton-grpc-port", type=port_number, default=8001, help="--demo: Triton gRPC port (default 8001).")
    parser.add_argument("--triton-metrics-port", type=port_number, default=8002,
                        help="--demo: Triton metrics port (default 8002).")
    parser.add_argument("--pacing-rate", type=positive_float, metavar="TOKENS_PER_SECOND",
                        help="--demo: also serve the benchmark pacing model (`pacing`: words at this fixed rate, "
                        "no compute), for `python -m benchmarks.overhead --triton ...`.")
    parser.add_argument("--model", type=_model_name, default=None,
                        help=HELP["model"] + f" Usually {' or '.join(SUPPORTED_MODELS)}; any decoupled text model "
                        "works (e.g. pacing, the benchmark model). With --openai: " + HELP["openai_model"])
    parser.add_argument("--template", default=AppConfig.template, help=HELP["template"])
    parser.add_argument("--tokenizer", dest="tokenizer_dir", help=HELP["tokenizer_dir"])
    parser.add_argument("--system-prompt", default="", help=HELP["system_prompt"])
    parser.add_argument("--concurrency", type=positive_int, default=AppConfig.concurrency,
                        help=HELP["concurrency"])
    parser.add_argument("--auth-file", type=login_file, help="File of USER:PASSWORD lines; the UI asks for a login. "
                        "Required for the Build tab when --host is not a loopback address.")
    parser.add_argument("--workspace", action="append", type=_workspace_root, metavar="FOLDER",
                        help=HELP["workspace"] + " Repeat for several; / and system folders are refused.")
    parser.add_argument("--allowed-hosts", type=_host_names, default=(), metavar="NAME[,NAME...]",
                        help=HELP["allowed_hosts"] + " For a reverse proxy or a DNS name (e.g. gpu-box.lan).")
    parser.add_argument("--arena-db", metavar="URL", help=HELP["arena_db"])
    parser.add_argument("--max-file-size", default=AppConfig.max_file_size, help=HELP["max_file_size"])
    return parser


def refuse_contradictions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Options that contradict each other end the command with one line saying which to leave out."""
    if args.pacing_rate is not None and not args.demo:
        parser.error("--pacing-rate adds the pacing model to the demo's own server; use it with --demo")
    if (args.api_key_file or args.adapters_as) and not args.openai:
        parser.error("--api-key-file and --adapters-as are for an OpenAI-compatible server; use them with --openai")
    if args.openai and (args.deployment not in (None, AppConfig.deployment) or args.server_adapters_dir):
        parser.error("--deployment and --server-adapters-dir are for a Triton server; leave them out with --openai")
    if args.model_adapter and (args.openai or args.deployment == "llmapi"):
        parser.error("--model-adapter is for the Triton engine topology (e.g. InternLM-XComposer2's Partial LoRA); "
                     "leave it out with --openai and --deployment llmapi")
    if args.twin is not None and not args.demo:
        parser.error(MSG_TWIN_WITHOUT_DEMO.format(twin=args.twin, kind=twin_kind(args.twin)))
    if args.twin is not None and args.deployment not in (None, twin_kind(args.twin)):
        parser.error(MSG_TWIN_KIND_CONFLICT.format(twin=args.twin, kind=twin_kind(args.twin)))
    if args.demo and args.twin is None and args.deployment == "runner":
        parser.error(MSG_DEMO_RUNNER_NEEDS_TWIN.format(families=", ".join(RUNNER_TWINS)))
    if args.server_adapters_dir and args.deployment != "llmapi":
        parser.error("--server-adapters-dir is where an llmapi model reads adapters; use it with --deployment llmapi")


def served_kind(args: argparse.Namespace) -> str:
    """The server kind the app talks to: --deployment, else the twin's kind, else engine."""
    return args.deployment or (twin_kind(args.twin) if args.twin else AppConfig.deployment)


def demo_repository(args: argparse.Namespace) -> str:
    """Which CPU demo repository --demo writes (start_demo_triton's `deployment`): the twin, else the kind's demo."""
    return args.twin or ("llmapi" if served_kind(args) == "llmapi" else DEFAULT_TWIN)


def config_from_args(args: argparse.Namespace, url: str, metrics_url: str | None) -> AppConfig:
    """The app's configuration from the command line, against the server at `url` (gRPC) and its metrics."""
    openai = dict(openai_url=args.openai, openai_model=args.model, api_key_file=args.api_key_file,
                  adapters_as=args.adapters_as) if args.openai else {}
    model = AppConfig.model if args.openai or args.model is None else args.model
    tokenizer_dir = args.tokenizer_dir
    kind = served_kind(args)
    if kind == "runner" and not args.openai:
        model = args.model or RUNNER_MODEL
    if kind == "llmapi" and not args.openai:
        model = args.model or LLMAPI_MODEL
        if args.demo and not tokenizer_dir:  # the demo's model: the app reads its chat template
            from setup.cpu.model import model_dir

            tokenizer_dir = str(model_dir())
    twin = {}
    if args.twin == XCOMPOSER2_DEMO:  # the twin's own adapters folder, holding the model's Partial LoRA
        from setup.cpu.xcomposer2_demo import twin_settings

        settings = twin_settings()
        twin = dict(adapters_dir=str(settings.adapters_path), model_adapter=settings.model_adapter)
    if args.model_adapter:
        twin["model_adapter"] = args.model_adapter
    return AppConfig(triton_url=url, model=model, host=args.host, port=args.port,
                     concurrency=args.concurrency, template=args.template, tokenizer_dir=tokenizer_dir,
                     system_prompt=args.system_prompt, max_file_size=args.max_file_size, demo=args.demo,
                     auth=args.auth_file, metrics_url=metrics_url, workspace=tuple(args.workspace or ()),
                     allowed_hosts=args.allowed_hosts,
                     deployment=kind,
                     server_adapters_dir=args.server_adapters_dir, arena_db=args.arena_db, **openai, **twin)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from app.bench.cli import main as bench_main

        return bench_main(argv[1:])
    if argv[:1] == ["compare"]:
        from app.cli.compare import main as compare_main

        return compare_main(argv[1:])
    if argv[:1] == ["arena"]:
        from app.arena.cli import main as arena_main

        return arena_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_contradictions(parser, args)
    keep_scratch_in_cache()
    from setup.cpu.model import ModelPreparationError
    from setup.launcher import LaunchError
    from setup.repo.writer import RepoError

    signal.signal(signal.SIGTERM, raise_interrupt)
    # Ctrl-C must stop the demo even when a launcher started us with SIGINT ignored (e.g. `make demo &`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    triton = None
    try:
        if args.demo:
            from setup.cpu.demo import start_demo_triton

            triton = start_demo_triton(args.triton_http_port, args.triton_grpc_port, args.triton_metrics_port,
                                       pacing_rate=args.pacing_rate,
                                       deployment=demo_repository(args))
            url = f"127.0.0.1:{args.triton_grpc_port}"
            metrics_url = f"http://127.0.0.1:{args.triton_metrics_port}/metrics"
        else:
            url, metrics_url = args.triton or AppConfig.triton_url, None
        config = config_from_args(args, url, metrics_url)
        from app.web.ui import launch

        ctx = AppContext(config)
        threading.Thread(target=ctx.deployment.warm_up, name="warm-up", daemon=True).start()
        url = ctx.access.url(f"http://{_url_host(args.host)}:{args.port}/")
        print(f"Web UI on {url} (Ctrl-C stops {'both' if triton else 'it'})", flush=True)
        print(f"Workspace folders (Build, Adapters): {ctx.access.workspace.describe()}", flush=True)
        launch(ctx)
        return 0
    except KeyboardInterrupt:
        return 0
    except (LaunchError, RepoError, ModelPreparationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        if triton is not None:
            print("Stopping tritonserver...", flush=True)
            triton.stop()


if __name__ == "__main__":
    sys.exit(main())
