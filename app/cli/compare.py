"""`python -m app compare`: the Compare tab's job from a terminal. One prompt (and optionally images) streamed
at once through the base model and up to three adapters; prints each column's final text and its state (marked
when the reply was cut at --max-tokens) and figures.

    python -m app compare --triton 127.0.0.1:8001 --prompt "What is the capital of France?" --base --adapter pirate
    python -m app compare --openai http://127.0.0.1:8000/v1 [--model NAME] --prompt TEXT --adapter NAME ...
    python -m app compare --app http://127.0.0.1:7860 --prompt TEXT --base [--image FILE]...   through the app's API

--triton and --openai connect as `python -m app` does (the same deployment code, adapters from --adapters-dir);
--app calls a running app's Gradio API (its `compare` endpoint), so the figures are the app's users'. Bad input
ends in one line `error: ...` (the sentence the UI shows) and exit code 2; a column that failed gives exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path

from app.chat.compare import CUT, DEFAULT_MAX_TOKENS, FAILED, CompareRun
from app.chat.messages import MSG_COMPARE_CUT
from app.cli.app_client import compare_through_app
from app.cli.messages import MSG_CLI_IMAGE_MISSING, MSG_CLI_INTERRUPTED
from app.context import AppConfig, AppContext
from app.core.constants import LLMAPI_MODEL, MAX_COMPARE_ADAPTERS
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.deployments.connect import DEPLOYMENTS
from setup.cli_types import OneLineErrorParser, host_port, http_url, login_file, positive_int

HELP = AppConfig.help()


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="python -m app compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--triton", type=host_port, metavar="HOST:GRPC_PORT", help="A Triton server's gRPC address.")
    where.add_argument("--openai", type=http_url, metavar="URL", help=HELP["openai_url"])
    where.add_argument("--app", type=http_url, metavar="URL",
                       help="A running app (e.g. http://127.0.0.1:7860): Compare through its Gradio API.")
    parser.add_argument("--login-file", type=login_file, metavar="FILE",
                        help="With --app: a file whose first USER:PASSWORD line logs in to an app started with "
                             "--auth-file.")
    parser.add_argument("--prompt", required=True, help="The message every column answers.")
    parser.add_argument("--adapter", action="append", default=[], metavar="NAME",
                        help=f"An adapter's column; repeat for up to {MAX_COMPARE_ADAPTERS}.")
    parser.add_argument("--base", action="store_true", help="A column for the base model (the first column).")
    parser.add_argument("--image", dest="images", type=Path, action="append", default=[], metavar="FILE",
                        help="An image sent with the prompt to every column; repeat for several.")
    parser.add_argument("--max-tokens", type=positive_int, default=DEFAULT_MAX_TOKENS,
                        help=f"New tokens per column at most (default {DEFAULT_MAX_TOKENS}).")
    parser.add_argument("--json", action="store_true",
                        help="Print the columns as JSON ({column, text, state, figures, finish_reason} each) "
                             "instead of text.")
    here = parser.add_argument_group("with --triton or --openai (as `python -m app` takes them)")
    here.add_argument("--model", default=None, help=HELP["model"] + " With --openai: " + HELP["openai_model"])
    here.add_argument("--deployment", choices=DEPLOYMENTS, default=AppConfig.deployment, help=HELP["deployment"])
    here.add_argument("--adapters-dir", default=AppConfig.adapters_dir, metavar="FOLDER", help=HELP["adapters_dir"])
    here.add_argument("--model-adapter", metavar="NAME", help=HELP["model_adapter"])
    here.add_argument("--tokenizer", dest="tokenizer_dir", metavar="FOLDER", help=HELP["tokenizer_dir"])
    here.add_argument("--template", default=AppConfig.template, help=HELP["template"])
    here.add_argument("--api-key-file", metavar="FILE", help=HELP["api_key_file"])
    return parser


def app_config(args: argparse.Namespace) -> AppConfig:
    """The configuration `python -m app` would build for --triton or --openai with these options."""
    if args.openai:
        return AppConfig(openai_url=args.openai, openai_model=args.model, api_key_file=args.api_key_file,
                         adapters_dir=args.adapters_dir)
    model = args.model or (LLMAPI_MODEL if args.deployment == "llmapi" else AppConfig.model)
    return AppConfig(triton_url=args.triton, model=model, deployment=args.deployment, adapters_dir=args.adapters_dir,
                     model_adapter=args.model_adapter, tokenizer_dir=args.tokenizer_dir, template=args.template)


def compare_here(config: AppConfig, prompt: str, adapters: list[str | None], max_tokens: int,
                 images: list[Path] | None = None, ctx: AppContext | None = None) -> list[dict[str, str | None]]:
    """The final columns of one Compare run through the deployment `config` names (or `ctx`'s); ChatError with
    the UI's sentence when the input is refused. Ctrl-C stops every column."""
    ctx = ctx or AppContext(config)
    run = CompareRun(ctx, prompt, adapters, SamplingParams(max_tokens=max_tokens),
                     images=[str(image) for image in images] if images else None)
    last = deque(run.entry_updates(), maxlen=1)  # Ctrl-C inside it ends the updates, which cancels every column
    return last[0] if last else []


def format_columns(columns: list[dict[str, str | None]], max_tokens: int) -> str:
    """Each column as a heading with its name, its final text, then its state (and a mark when its reply reached
    `max_tokens`) and figures line."""
    blocks = []
    for entry in columns:
        cut = MSG_COMPARE_CUT.format(limit=max_tokens) if entry.get("finish_reason") == CUT else ""
        status = " · ".join(part for part in (entry["state"], cut, entry["figures"]) if part)
        blocks.append(f"=== {entry['column']} ===\n{entry['text'].strip()}\n--- {status}")
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None, ctx: AppContext | None = None) -> int:
    """Run the command; `ctx` (tests) stands in for the deployment --triton/--openai would connect to."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.app and (args.model or args.model_adapter or args.tokenizer_dir or args.api_key_file
                     or args.deployment != AppConfig.deployment or args.adapters_dir != AppConfig.adapters_dir):
        parser.error("--app uses the app's own deployment and adapters; leave out the deployment options")
    if args.login_file and not args.app:
        parser.error("--login-file logs in to a running app; use it with --app")
    if args.api_key_file and not args.openai:
        parser.error("--api-key-file is for an OpenAI-compatible server; use it with --openai")
    adapters: list[str | None] = ([None] if args.base else []) + list(args.adapter)
    try:
        for image in args.images:
            if not image.is_file():
                raise ChatError(MSG_CLI_IMAGE_MISSING.format(path=image))
        if args.app:
            login = args.login_file[0] if args.login_file else None
            columns = compare_through_app(args.app, args.prompt, adapters, args.max_tokens, args.images, login)
        else:
            columns = compare_here(app_config(args), args.prompt, adapters, args.max_tokens, args.images, ctx=ctx)
    except ChatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(MSG_CLI_INTERRUPTED, file=sys.stderr)
        return 130
    print(json.dumps(columns, indent=2, ensure_ascii=False) if args.json else format_columns(columns, args.max_tokens))
    return 1 if any(entry["state"] == FAILED for entry in columns) else 0
