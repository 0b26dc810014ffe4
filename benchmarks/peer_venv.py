"""A venv of its own for a peer server (vLLM's CPU build, Dynamo): created once, a marker file records
that every pip step of its recipe ran, so a broken half-install is redone rather than trusted."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def _run(argv: list[str], log: Callable[[str], None]) -> None:
    log("$ " + " ".join(argv))
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


def ensure_venv(venv: Path, marker_name: str, pip_steps: Sequence[Sequence[str]],
                log: Callable[[str], None] = print) -> Path:
    """`venv` after `pip <step>` for each step (once); returns its python."""
    python = venv / "bin" / "python"
    marker = venv / f".installed-{marker_name}"
    if marker.exists():
        return python
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)], log)
    _run([str(python), "-m", "pip", "install", "-q", "-U", "pip"], log)
    for step in pip_steps:
        _run([str(python), "-m", "pip", *step], log)
    for old in venv.glob(".installed-*"):
        old.unlink()
    marker.touch()
    return python
