"""The build view of the model families (setup/catalog/family_data.py) and TensorRT-LLM eras (trtllm_versions.yaml).

Every family file with a `build:` section is in the catalogue; facts the image fields already state at the
top level (tokens and images per request, image size, hf_model_path, ...) are filled into that section
(family_data.SHARED_FACTS). Values that change between TensorRT-LLM versions are written in the YAML as a
mapping keyed by version ("0.11", "0.17", "0.20"); `by_era` picks the newest key not above the chosen version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from setup.catalog.family_data import BUILD_KEY, FAMILIES_DIR, SHARED_FACTS, family_files, top_value
from setup.catalog.messages import MSG_BAD_VERSION
from setup.paths import DATA_DIR
from setup.shipped import shipped_yaml

VERSIONS_FILE = DATA_DIR / "trtllm_versions.yaml"


def version_key(text: str) -> tuple[int, int]:
    """'0.19.0' -> (0, 19); ValueError when it is not a version number."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[.\-+a-zA-Z0-9]*)?", str(text).strip())
    if not match:
        raise ValueError(MSG_BAD_VERSION.format(version=text))
    return int(match.group(1)), int(match.group(2))


def by_era(value, era: str):
    """A plain value, or the entry of an era-keyed mapping for the newest key not above `era`."""
    if not isinstance(value, dict) or not value or not all(_is_version(k) for k in value):
        return value
    chosen = [k for k in value if version_key(k) <= version_key(era)]
    if not chosen:
        return None
    return value[max(chosen, key=version_key)]


def _is_version(key) -> bool:
    return isinstance(key, str) and re.fullmatch(r"\d+\.\d+", key) is not None


@dataclass(frozen=True)
class Era:
    """Family-independent facts of one TensorRT-LLM era."""

    key: str
    label: str
    seq_len_flag: str
    visual_builder: str
    visual_engine_file: str
    multimodal_path_parameter: str
    lora_converter: str
    lora_prefetch: bool
    examples_layout: str = "flat"  # flat: examples/<model>/; models: examples/models/core|contrib/<model>/
    lora_config_columns: int = 3
    switch_flags: tuple[str, ...] = ()  # trtllm-build flags that are bare switches in this era
    tensors: str = ""  # entry of release_tensors.yaml: how the release's tensorrt_llm model differs
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrtllmVersion:
    """A chosen TensorRT-LLM version and the era it belongs to."""

    text: str
    key: tuple[int, int]
    era: Era

    def at_least(self, other: str | None) -> bool:
        return other is not None and self.key >= version_key(other)


@cache
def eras() -> dict[str, Era]:
    raw = shipped_yaml(VERSIONS_FILE.name)
    return {key: Era(key=key, **{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
            for key, fields in raw.items()}


def resolve_version(text: str) -> TrtllmVersion:
    """The era of a version string; ValueError for an unparsable or too old version."""
    key = version_key(text)
    known = sorted(eras(), key=version_key)
    chosen = [k for k in known if version_key(k) <= key]
    if not chosen:
        raise ValueError(MSG_BAD_VERSION.format(version=text) + f" The oldest supported is {known[0]}.")
    return TrtllmVersion(text=str(text).strip(), key=key, era=eras()[chosen[-1]])


@dataclass(frozen=True)
class EngineSpec:
    """One trtllm-build run of a family (most have one; encoder-decoder models may have two)."""

    name: str
    flags: dict
    limits: tuple[str, ...]
    checkpoint_subdir: str = ""
    era_flags: dict = field(default_factory=dict)
    encoder_input_len: str | None = None  # "visual": tokens x images; "input": max_input_len

    def flags_for(self, era: str) -> dict:
        return {**self.flags, **(by_era(self.era_flags, era) or {})}


@dataclass(frozen=True)
class Family:
    """Everything the planner and the wizard need to know about one model family.

    `raw` is the file's build section with the shared top-level facts filled in, plus `id`, `name` (the
    display name) and `example_checkpoint`.
    """

    id: str
    name: str
    kind: str  # text | vlm | encdec
    raw: dict

    @property
    def dtypes(self) -> list[str]:
        return list(self.raw["dtypes"])

    @property
    def default_dtype(self) -> str:
        return self.dtypes[0]

    @property
    def min_version(self) -> str:
        return self.raw.get("min_version", "0.11")

    @property
    def checkpoint_is_file(self) -> bool:
        return self.raw.get("checkpoint", "dir") == "nemo"

    @property
    def defaults(self) -> dict:
        return dict(self.raw["defaults"])

    @property
    def engines(self) -> list[EngineSpec]:
        return [EngineSpec(name=e["name"], flags=dict(e.get("flags") or {}), limits=tuple(e["limits"]),
                           checkpoint_subdir=e.get("checkpoint_subdir", ""), era_flags=dict(e.get("era_flags") or {}),
                           encoder_input_len=e.get("encoder_input_len"))
                for e in self.raw["engines"]]

    @property
    def convert(self) -> dict:
        return self.raw["convert"]

    def convert_script(self, era: str) -> str:
        return by_era(self.convert["script"], era)

    @property
    def visual(self) -> dict | None:
        return self.raw.get("visual")

    @property
    def is_multimodal(self) -> bool:
        return self.visual is not None

    def visual_model_type(self, era: str) -> str | None:
        return by_era(self.visual["model_type"], era) if self.visual else None

    def visual_writes_engine(self, era: str) -> bool:
        return bool(by_era(self.visual.get("engine_file", True), era)) if self.visual else False

    @property
    def tokens_per_image(self) -> int:
        return int(self.visual["tokens_per_image"]) if self.visual else 0

    @property
    def max_images(self) -> int:
        return int(self.visual.get("max_images", 1)) if self.visual else 0

    @property
    def lora(self) -> dict:
        return self.raw.get("lora") or {"supported": False}

    @property
    def triton(self) -> dict:
        return self.raw.get("triton") or {}

    def triton_served(self, version: TrtllmVersion) -> bool:
        """Whether this project's Triton templates (backend-style) serve the family at `version`."""
        return not self.triton.get("refused") and version.at_least(self.triton.get("since"))

    def notes(self, version: TrtllmVersion) -> list[str]:
        extra = by_era(self.raw.get("version_notes") or {}, version.era.key)
        return list(self.raw.get("notes") or []) + ([extra] if extra else [])


def _build_view(family: dict) -> Family:
    raw = family[BUILD_KEY]
    for top, path in SHARED_FACTS:
        value = top_value(family, top)
        if value is None:
            continue
        section, *inner, key = path
        if not isinstance(raw.get(section), dict):
            continue  # e.g. no `visual` section: no visual engine is built
        holder = raw[section]
        for part in inner:
            holder = holder.setdefault(part, {})
        filled = {key: value, **holder}  # the shared fact first: deployment parameters keep their order
        holder.clear()
        holder.update(filled)
    raw.update(id=family["id"], name=family["display_name"],
               example_checkpoint=family.get("example_checkpoint"))
    return Family(id=raw["id"], name=raw["name"], kind=raw["kind"], raw=raw)


@cache
def families(folder: Path = FAMILIES_DIR) -> dict[str, Family]:
    """Every family with a build section, by id, in file-name order."""
    return {family_id: _build_view(raw)
            for family_id, raw in family_files(folder).items() if BUILD_KEY in raw}


def get_family(family_id: str) -> Family:
    try:
        return families()[family_id]
    except KeyError:
        raise KeyError(family_id) from None
