"""The benchmark pacing model: add it to a written repository, or serve it alone for fast tests.

    python -m setup.cpu.pacing add --repo DIR [--tokens-per-second 50]   add `pacing` to a repository
    python -m setup.cpu.pacing serve [--grpc-port 8001 ...]              tritonserver with `pacing` only
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from setup.cli_types import OneLineErrorParser, port_number, raise_interrupt
from setup.launcher import (
    LaunchError,
    LaunchOptions,
    TritonProcess,
    check_ports_free,
    claim_instance_folder,
    find_tritonserver,
    start_triton,
)
from setup.paths import TEMPLATES_DIR, cache_dir
from setup.repo.fill import FillError, fill
from setup.repo.writer import RepoError, parse_model_config

PACING_TEMPLATE = TEMPLATES_DIR / "bench" / "pacing"
PACING_MODEL = "pacing"


@dataclass(frozen=True)
class PacingSpec:
    """How the pacing model streams: words per second, a fixed delay before the first, load time."""

    tokens_per_second: float = 50.0
    first_token_delay_ms: float = 0.0
    startup_delay_seconds: float = 0.0
    max_batch_size: int = 64

    def __post_init__(self) -> None:
        if not self.tokens_per_second > 0:
            raise RepoError(f"tokens per second must be above 0, got {self.tokens_per_second}.")
        if self.first_token_delay_ms < 0 or self.startup_delay_seconds < 0:
            raise RepoError("Pacing delays cannot be negative.")
        if self.max_batch_size < 1:
            raise RepoError(f"max batch size must be at least 1, got {self.max_batch_size}.")


def render_pacing_config(spec: PacingSpec) -> str:
    """The filled, parsed-and-checked config.pbtxt of the pacing model."""
    try:
        text = fill((PACING_TEMPLATE / "config.pbtxt").read_text(), {
            "tokens_per_second": spec.tokens_per_second, "first_token_delay_ms": spec.first_token_delay_ms,
            "startup_delay_seconds": spec.startup_delay_seconds, "max_batch_size": spec.max_batch_size,
        })
    except FillError as exc:
        raise RepoError(f"pacing/config.pbtxt: {exc}") from None
    parse_model_config(text, "pacing/config.pbtxt")
    return text


def add_pacing_model(repo: Path, spec: PacingSpec | None = None) -> Path:
    """Copy the pacing model into an existing repository (replacing an older copy); its folder."""
    repo = Path(repo)
    if not repo.is_dir():
        raise RepoError(f"Model repository {repo} does not exist.")
    target = repo / PACING_MODEL
    staging = repo / f".{PACING_MODEL}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(PACING_TEMPLATE, staging, ignore=shutil.ignore_patterns("__pycache__", "config.pbtxt"))
    (staging / "config.pbtxt").write_text(render_pacing_config(spec or PacingSpec()))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def write_pacing_repository(out: Path, spec: PacingSpec | None = None) -> Path:
    """A repository that holds the pacing model alone (starts in seconds; for tests and overhead runs)."""
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    add_pacing_model(out, spec)
    return out


def start_pacing_triton(repo: Path, http_port: int, grpc_port: int, metrics_port: int, log_path: Path,
                        ready_timeout: float = 120.0, port_flag: str | None = "--{kind}-port") -> TritonProcess:
    """Start tritonserver (CPU only) on `repo` and wait until it is ready; the caller stops it."""
    options = LaunchOptions(model_repo=Path(repo).resolve(), http_port=http_port, grpc_port=grpc_port,
                            metrics_port=metrics_port, cpu_only=True, extra_args=("--exit-timeout-secs=5",))
    return start_triton(find_tritonserver(), options, Path(log_path), ready_timeout, port_flag=port_flag)


def _parser() -> argparse.ArgumentParser:

    parser = OneLineErrorParser(prog="python -m setup.cpu.pacing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineErrorParser)
    for name in ("add", "serve"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--tokens-per-second", type=float, default=PacingSpec.tokens_per_second)
        cmd.add_argument("--first-token-delay-ms", type=float, default=0.0)
    sub.choices["add"].add_argument("--repo", type=Path, required=True, help="Written model repository.")
    serve = sub.choices["serve"]
    serve.add_argument("--repo", type=Path, default=None, help="Where to write it (default: in the cache).")
    serve.add_argument("--http-port", type=port_number, default=8000)
    serve.add_argument("--grpc-port", type=port_number, default=8001)
    serve.add_argument("--metrics-port", type=port_number, default=8002)
    return parser


def main(argv: list[str] | None = None) -> int:

    args = _parser().parse_args(argv)
    try:
        spec = PacingSpec(tokens_per_second=args.tokens_per_second, first_token_delay_ms=args.first_token_delay_ms)
        if args.command == "add":
            print(f"Added {add_pacing_model(args.repo, spec)}")
            return 0
        ports = (args.http_port, args.grpc_port, args.metrics_port)
        check_ports_free(LaunchOptions(model_repo=Path("."), http_port=ports[0], grpc_port=ports[1],
                                       metrics_port=ports[2]))  # before anything is written
        signal.signal(signal.SIGTERM, raise_interrupt)
        folder = None if args.repo else claim_instance_folder(cache_dir() / "pacing_repositories",
                                                              "-".join(map(str, ports)))
        try:
            repo = write_pacing_repository(args.repo or folder.path / "repo", spec)
            process = start_pacing_triton(repo, *ports, cache_dir() / "logs" / f"pacing_triton-{ports[0]}.log")
        except BaseException:
            if folder is not None:
                folder.release()
            raise
        if folder is not None:
            process.add_cleanup(folder.release)
        try:
            print(f"pacing model ready on gRPC 127.0.0.1:{args.grpc_port} (log {process.log_path}); "
                  "Ctrl-C stops it.", flush=True)
            process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            process.stop()
        return 0
    except KeyboardInterrupt:
        return 0
    except (RepoError, LaunchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
