"""Where the project keeps its caches and generated files."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PROJECT_ROOT / "model_repo_templates"
DATA_DIR = Path(__file__).resolve().parent / "data"


def cache_dir() -> Path:
    """Root of the cache (converted CPU model, Triton backends copy, demo repository).

    `TRITON_DEMO_CACHE` overrides it; otherwise `$XDG_CACHE_HOME/triton-vlm-lora-demo`.
    """
    explicit = os.environ.get("TRITON_DEMO_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "triton-vlm-lora-demo"


def keep_scratch_in_cache(environ=os.environ) -> None:
    """With no TMPDIR of the user's, Gradio's uploads and PyTorch's compile cache go under the cache folder instead
    of /tmp/gradio and /tmp/torchinductor_USER, which outlive the app. A TMPDIR, GRADIO_TEMP_DIR or
    TORCHINDUCTOR_CACHE_DIR that is set wins. Call before Gradio is imported: it reads the variable then."""
    if environ.get("TMPDIR"):
        return
    environ.setdefault("GRADIO_TEMP_DIR", str(cache_dir() / "uploads"))
    environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir() / "torchinductor"))
