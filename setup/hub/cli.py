"""`python -m setup download --model-id ORG/NAME [--revision REV] --dest DIR`: the plan's first step.

The token is read from HF_TOKEN only (never a flag: flags are written into the plan and the build log)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from huggingface_hub.utils import disable_progress_bars

from setup.hub.download import DownloadError, download
from setup.hub.names import DEFAULT_REVISION, model_id_problem, revision_problem, scrub


def add_download_command(sub) -> None:
    parser = sub.add_parser("download", help="Download a Hugging Face model's checkpoint files into a folder "
                            "(resumable; a complete download is not fetched again). Token: $HF_TOKEN.")
    parser.add_argument("--model-id", required=True, help="Hugging Face model id, ORG/NAME.")
    parser.add_argument("--revision", default=DEFAULT_REVISION, help="Branch, tag or commit (default main).")
    parser.add_argument("--dest", type=Path, required=True, help="Folder the checkpoint files go to.")


def cmd_download(args: argparse.Namespace) -> int:
    token = os.environ.get("HF_TOKEN") or None
    problem = model_id_problem(args.model_id) or revision_problem(args.revision)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    disable_progress_bars()  # the build log gets one "downloaded X of Y (N%)" line a second instead
    try:
        download(args.model_id, args.dest, args.revision, token, say=lambda line: print(line, flush=True))
    except DownloadError as exc:
        print(f"error: {scrub(str(exc), token)}", file=sys.stderr, flush=True)
        return 1
    return 0
