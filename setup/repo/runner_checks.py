"""Consistency checks of a runner repository (template multimodal_runner), run by the writer before anything is
written: the three folders the runner is built from, and the visual engine's model type against the family."""

from __future__ import annotations

from pathlib import Path

from setup.catalog.builds import families
from setup.catalog.family_data import family_files
from setup.repo import messages as M
from setup.repo.multimodal_checks import read_json

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
    settings = str(values.get("runner_settings") or "")
    for piece in (p.strip() for p in settings.split(";")):
        name, sep, _ = piece.partition("=")
        if piece and (not sep or not name.strip().isidentifier()):
            raise ValueError(M.MSG_RUNNER_SETTINGS.format(given=settings))
