"""Consistency checks of an InternLM-XComposer2 repository (template internlm_xcomposer2), run by the writer
before anything is written: the visual engine file preprocessing runs, the image marker and token count,
and the LLM engine's prompt table and LoRA build (Partial LoRA is part of the model)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from setup.catalog.builds import get_family
from setup.repo import messages as M
from setup.repo.multimodal_checks import read_json

FAMILY_ID = "internlm-xcomposer2"
MARKER = "<ImageHere>"
ENGINE_FILES = ("visual_encoder.engine", "model.engine")  # fork / <= 0.11 name, then 0.12+


@dataclass(frozen=True)
class Xcomposer2Layout:
    tokens_per_image: int
    table_size: int
    max_batch_size: int
    lora_rank: int


def _required(values: dict, name: str, why: str) -> str:
    value = values.get(name)
    if value is None or str(value) == "":
        raise ValueError(M.MSG_XC2_NEEDS.format(name=name, why=why))
    return str(value)


def _whole(values: dict, name: str, default: int) -> int:
    value = values.get(name)
    if value in (None, ""):
        return default
    try:
        return int(str(value))
    except ValueError:
        raise ValueError(M.MSG_XC2_NOT_NUMBER.format(name=name, value=value)) from None


def check_plan_file(path: Path) -> None:
    """vit_plan_dir must name the engine file itself (the parameter's name says dir, the fork reads a file)."""
    if path.is_dir():
        found = [name for name in ENGINE_FILES if (path / name).is_file()]
        hint = f" (did you mean {path / found[0]}?)" if found else ""
        raise ValueError(M.MSG_XC2_PLAN_IS_DIR.format(path=path, hint=hint))
    if not path.is_file():
        raise ValueError(M.MSG_XC2_PLAN_MISSING.format(path=path))


def _check_marker(values: dict) -> None:
    marker = values.get("image_marker") or MARKER
    if marker != MARKER:
        raise ValueError(M.MSG_XC2_MARKER.format(given=marker))


def _engine_table(values: dict, tokens: int, what: str) -> tuple[Path, dict, int, int]:
    """(engine folder, its config.json, max batch size, prompt-table size); ValueError unless the table holds
    exactly `tokens` rows for every request of a full batch."""
    engine = Path(_required(values, "engine_dir", what))
    config = read_json(engine / "config.json")
    build = config.get("build_config", {})
    batch = int(build.get("max_batch_size", 0))
    table = int(build.get("max_prompt_embedding_table_size", 0) or 0)
    if table != batch * tokens:
        raise ValueError(M.MSG_XC2_TABLE.format(engine=engine, table=table, batch=batch, tokens=tokens,
                                                expected=batch * tokens))
    return engine, config, batch, table


def check_xcomposer2(values: dict) -> Xcomposer2Layout:
    """Check the filled parameters of an InternLM-XComposer2 repository; ValueError with the fix on failure."""
    family = get_family(FAMILY_ID)
    tokens, rank = family.tokens_per_image, int(family.lora.get("default_rank", 256))
    _check_marker(values)
    given_tokens = _whole(values, "tokens_per_image", tokens)
    if given_tokens != tokens:
        raise ValueError(M.MSG_XC2_TOKENS.format(given=given_tokens, tokens=tokens))
    cache = _whole(values, "lora_cache_max_adapter_size", rank)
    if cache < rank:
        raise ValueError(M.MSG_XC2_CACHE_RANK.format(given=cache, rank=rank))
    check_plan_file(Path(_required(values, "vit_plan_dir", "the visual engine file preprocessing runs")))
    engine, config, batch, table = _engine_table(values, tokens, "the LLM engine folder with config.json")
    build = config.get("build_config", {})
    plugins = build.get("plugin_config") or {}
    if "lora_plugin" in plugins and not plugins["lora_plugin"]:
        raise ValueError(M.MSG_XC2_NO_LORA.format(engine=engine, rank=rank))
    engine_rank = int((build.get("lora_config") or {}).get("max_lora_rank") or rank)
    if engine_rank < rank:
        raise ValueError(M.MSG_XC2_LORA_RANK.format(engine=engine, engine_rank=engine_rank, rank=rank))
    return Xcomposer2Layout(tokens_per_image=tokens, table_size=table, max_batch_size=batch, lora_rank=engine_rank)


def check_xcomposer2_cpu(values: dict) -> Xcomposer2Layout:
    """The CPU twin (template internlm_xcomposer2_cpu): the marker, the CPU encoder's config.json as vit_plan_dir
    with as many rows per image as tokens_per_image, the engine's table room and its Partial-LoRA switch."""
    _check_marker(values)
    plan = Path(_required(values, "vit_plan_dir", "the CPU encoder's config.json preprocessing runs"))
    check_plan_file(plan)
    try:
        builder = read_json(plan)["builder_config"]
        tokens = int(builder["num_visual_features"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(M.MSG_XC2_CPU_NOT_ENCODER.format(path=plan, detail=exc)) from None
    given = _whole(values, "tokens_per_image", tokens)
    if given != tokens:
        raise ValueError(M.MSG_XC2_CPU_TOKENS.format(given=given, encoder=plan.parent, tokens=tokens))
    engine, config, batch, table = _engine_table(values, tokens, "the CPU engine folder with config.json")
    build = config.get("build_config", {})
    if not config.get("pretrained_config", {}).get("has_partial_lora_mask"):
        raise ValueError(M.MSG_XC2_CPU_PARTIAL.format(engine=engine))
    rank = int((build.get("lora_config") or {}).get("max_lora_rank") or 0)
    return Xcomposer2Layout(tokens_per_image=tokens, table_size=table, max_batch_size=batch, lora_rank=rank)
