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
])
def test_bad_values_give_one_line_errors(args, message):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
