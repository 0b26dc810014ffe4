"""Command lines: help on every option, one-line errors for bad values (run as real subprocesses)."""

import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", ["app", "setup"])
def test_help(module):
    result = run(module, "--help")
    assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.parametrize("args, message", [
    (("app",), "one of the arguments --demo --triton --openai is required"),
    (("app", "--triton", "localhost"), "is not HOST:PORT"),
    (("app", "--demo", "--port", "70000"), "outside 1-65535"),
    (("app", "--demo", "--triton", "a:1"), "not allowed with argument"),
    (("setup", "launch", "--repo", "/nonexistent-repo", "--cpu-only"), "does not exist"),
    (("setup", "launch", "--repo", ".", "--world-size", "0"), "must be at least 1"),
    (("setup", "repo", "--config", "/nonexistent.yaml", "--out", "/tmp/x"), "does not exist"),
])
def test_bad_values_give_one_line_errors(args, message):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
