"""app/__main__.py's command line, run as real subprocesses: help on every option, one-line errors for bad values."""

import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=120)


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.parametrize("args, message", [
    ((), "one of the arguments --demo --triton --openai is required"),
    (("--triton", "localhost"), "is not HOST:PORT"),
    (("--demo", "--port", "70000"), "outside 1-65535"),
    (("--demo", "--triton", "a:1"), "not allowed with argument"),
    (("--triton", "a:1", "--deployment", "xcomposer2"), "--deployment xcomposer2 is the CPU twin"),
    (("--openai", "http://a:1/v1", "--model-adapter", "x"), "--model-adapter is for the Triton engine topology"),
    (("--triton", "a:1", "--deployment", "llava-1.5"), "--deployment llava-1.5 is a CPU twin; against a server use "
                                                        "--deployment engine"),
    (("--demo", "--deployment", "qwen2-vl-twin"), "invalid choice: 'qwen2-vl-twin'"),
])
def test_bad_values_give_one_line_errors(args, message):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("family", ["blip2-opt", "llava-1.5", "vila", "gpt", "llama"])
def test_each_template_twin_is_a_demo_deployment(family):
    """`--demo --deployment <family>` parses for each template twin (the family list comes from the family files)."""
    from app.__main__ import TEMPLATE_TWINS, build_parser

    assert family in TEMPLATE_TWINS
    args = build_parser().parse_args(["--demo", "--deployment", family])
    assert args.demo and args.deployment == family
    result = run("--demo", "--deployment", family, "--help")
    assert result.returncode == 0 and "llava-1.5 or llama" in " ".join(result.stdout.split())
