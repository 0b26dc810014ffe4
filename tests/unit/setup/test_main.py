"""setup/__main__.py's command line, run as real subprocesses: help, one-line errors for bad values."""

import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "setup", *args], capture_output=True, text=True, timeout=120)


def test_help():
    result = run("--help")
    assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.parametrize("args, message", [
    (("launch", "--repo", "/nonexistent-repo", "--cpu-only"), "does not exist"),
    (("launch", "--repo", ".", "--world-size", "0"), "must be at least 1"),
    (("repo", "--config", "/nonexistent.yaml", "--out", "/tmp/x"), "does not exist"),
])
def test_bad_values_give_one_line_errors(args, message):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
