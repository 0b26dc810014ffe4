"""Consistency checks of a runner repository (template multimodal_runner), run by the writer before anything is
written: the three folders the runner is built from, the visual engine's model type against the family, the
runner settings, and the requirements the family file records for its path in the runner (eras, args fields, LoRA)."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path

from setup.catalog.builds import families
from setup.catalog.family_data import family_files
from setup.paths import TEMPLATES_DIR
from setup.repo import messages as M
from setup.repo.multimodal_checks import read_json

ERAS_MODULE = TEMPLATES_DIR / "multimodal_runner" / "multimodal_runner" / "1" / "runner_lib" / "eras.py"
LATE_ARCHITECTURE = "LlavaNextForConditionalGeneration"  # late runners' TRT-LLM-built vision engine (facts §3)


def _folder(values: dict, name: str, why: str) -> Path:
    value = values.get(name)
    if value is None or str(value) == "":
        raise ValueError(M.MSG_RUNNER_NEEDS.format(name=name, why=why))
    return Path(str(value))


def recorded_model_types(family_id: str) -> set[str]:
    """What a family's visual engine may record as builder_config.model_type: the family file's top-level
    model_type where the engine records another name than the builder's flag (blip2-t5), else the builder's."""
    family = families()[family_id]
    recorded = family_files().get(family_id, {}).get("model_type")
    types = family.visual.get("model_type") if family.visual else None
    values = set(types.values()) if isinstance(types, dict) else {types} if types else set()
    return {recorded} if recorded else values


def engine_model_type(folder: Path) -> str:
    config = read_json(folder / "config.json")
    builder = config.get("builder_config") or {}
    if builder.get("model_type"):
        return str(builder["model_type"])
    if (config.get("pretrained_config") or {}).get("architecture") == LATE_ARCHITECTURE:
        return "llava_next"
    raise ValueError(M.MSG_RUNNER_NO_TYPE.format(path=folder / "config.json", folder=folder))


def check_runner(values: dict) -> None:
    """ValueError with one sentence when the folders or the family do not fit together."""
    visual = _folder(values, "visual_engine_dir", "the visual engine folder")
    llm = _folder(values, "llm_engine_dir", "the LLM engine folder")
    hf = _folder(values, "hf_model_dir", "the Hugging Face folder")
    model_type = engine_model_type(visual)
    family = str(values.get("multimodal_family") or "")
    if family:
        allowed = recorded_model_types(family) if family in families() else set()
        if model_type not in allowed:
            owners = [f for f in families() if model_type in recorded_model_types(f)]
            found = f"family '{owners[0]}'" if owners else "no family's"
            raise ValueError(M.MSG_RUNNER_FAMILY.format(given=family, folder=visual, model_type=model_type,
                                                        found=found))
    if not any((llm / where / "config.json").is_file() for where in ("", "decoder")):  # decoder-only, enc-dec
        raise ValueError(M.MSG_RUNNER_NO_LLM.format(folder=llm))
    if not hf.is_dir():
        raise ValueError(M.MSG_RUNNER_NO_HF.format(folder=hf))
    settings = _pairs(values, "runner_settings")
    required = _pairs(values, "runner_required")
    for name, wanted in required.items():
        if name in settings and settings[name] != wanted:
            raise ValueError(M.MSG_RUNNER_REQUIRED.format(name=name, given=settings[name], wanted=wanted))
    _check_eras(str(values.get("runner_eras") or ""))
    if family in families():
        check_family_requirements(family, values)


def _pairs(values: dict, name: str) -> dict[str, str]:
    """'a=1;b=x' -> {'a': '1', 'b': 'x'} (the text the model parses as JSON); ValueError on another shape."""
    text = str(values.get(name) or "")
    pairs = {}
    for piece in (p.strip() for p in text.split(";")):
        key, sep, value = piece.partition("=")
        if piece and (not sep or not key.strip().isidentifier()):
            raise ValueError(M.MSG_RUNNER_SETTINGS.format(name=name, given=text))
        if piece:
            pairs[key.strip()] = value.strip()
    return pairs


@cache
def _runner_eras():
    """The runner model's own era module (runner_lib/eras.py: its yaml and its parsing rule; it imports no Triton)."""
    spec = importlib.util.spec_from_file_location("runner_template_eras", ERAS_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def recorded_eras() -> list[str]:
    """The served eras of the runner model (model_repo_templates/multimodal_runner/.../runner_eras.yaml)."""
    return [era.name for era in _runner_eras().load_eras().eras if era.served]


def _check_eras(text: str) -> None:
    known = recorded_eras()
    unknown = [name for name in _runner_eras().parse_eras(text) if name not in known]
    if unknown:
        raise ValueError(M.MSG_RUNNER_ERAS.format(unknown=", ".join(unknown), known=", ".join(known)))


# The family file's Triton parameters a deployment of the family must keep: what the family's path in the runner
# needs (the eras that handle it, required args fields, no LoRA).
FAMILY_REQUIREMENTS = ("runner_eras", "runner_required", "takes_lora")


def check_family_requirements(family_id: str, values: dict) -> None:
    """ValueError when the deployment drops or changes a requirement the family file records."""
    triton = families()[family_id].triton
    wanted = triton.get("parameters") or {}
    for name in (n for n in FAMILY_REQUIREMENTS if n in wanted):
        if _text(values.get(name)) != _text(wanted[name]):
            raise ValueError(M.MSG_RUNNER_FAMILY_NEEDS.format(
                family=family_id, name=name, wanted=_text(wanted[name]), given=_text(values.get(name)) or "(unset)",
                why=f"setup/data/families/{family_id}.yaml, source [{triton.get('runner_source', '?')}]"))


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value).strip()
