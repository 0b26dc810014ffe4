"""Recorded facts for `trtllm-serve` plans: LLM API argument names per 1.x release and the PyTorch backend's families.

Data: setup/data/llm_api/<release>.yaml (names with the tag they came from) and setup/data/pytorch_backend.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import yaml

from setup.catalog.family_data import family_files
from setup.paths import DATA_DIR
from setup.plan.messages import MSG_NOT_MAPPING, MSG_RELEASE, MSG_UNKNOWN_FLAG, MSG_UNKNOWN_KEY
from setup.shipped import shipped_yaml

LLM_API_DIR = DATA_DIR / "llm_api"
BACKEND_FILE = DATA_DIR / "pytorch_backend.yaml"
NESTED = ("kv_cache_config", "lora_config")  # nested mappings whose field names are recorded too



@dataclass(frozen=True)
class LlmApiRelease:
    """The recorded argument names of one release and where they were read."""

    release: str
    source: dict
    verified_at_tag: bool
    complete: bool
    top_level: frozenset[str]
    nested: dict[str, frozenset[str]]
    serve_flags: frozenset[str]

    @property
    def tag(self) -> str:
        return self.source["tag"]

    def key_problems(self, options: dict) -> list[str]:
        """One sentence per key of an options mapping that this release does not take."""
        problems = []
        where = {"release": self.release, "repo": self.source["repo"], "tag": self.tag}
        for key, value in options.items():
            if key not in self.top_level:
                problems.append(MSG_UNKNOWN_KEY.format(key=key, **where))
                continue
            if key in self.nested and value is not None:
                if not isinstance(value, dict):
                    problems.append(MSG_NOT_MAPPING.format(key=key, what=key))
                    continue
                problems += [MSG_UNKNOWN_KEY.format(key=f"{key}.{inner}", **where)
                             for inner in value if inner not in self.nested[key]]
        return problems

    def flag_problems(self, argv: list[str]) -> list[str]:
        where = {"release": self.release, "repo": self.source["repo"], "tag": self.tag}
        return [MSG_UNKNOWN_FLAG.format(flag=a, **where) for a in argv
                if a.startswith("--") and a not in self.serve_flags]


@cache
def releases() -> dict[str, LlmApiRelease]:
    """Every recorded release by its "major.minor" text, oldest first."""
    found = {}
    for path in sorted(LLM_API_DIR.glob("*.yaml"), key=lambda p: tuple(int(x) for x in p.stem.split("."))):
        raw = yaml.safe_load(path.read_text())
        found[str(raw["release"])] = LlmApiRelease(
            release=str(raw["release"]), source=dict(raw["source"]),
            verified_at_tag=bool(raw.get("verified_at_tag")), complete=bool(raw.get("complete")),
            top_level=frozenset(raw["top_level"]),
            nested={name: frozenset(raw.get(name) or ()) for name in NESTED},
            serve_flags=frozenset(raw.get("serve_flags") or ()))
    return found


def resolve_release(version: str) -> LlmApiRelease:
    """'1.2', '1.2.1' or 'v1.2.0' -> the recorded 1.2; ValueError with a plain sentence otherwise."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:rc\d+)?(?:\.post\d+)?", str(version or "").strip())
    key = f"{match.group(1)}.{match.group(2)}" if match else None
    if key not in releases():
        raise ValueError(MSG_RELEASE.format(choices=", ".join(releases()), version=version))
    return releases()[key]


@dataclass(frozen=True)
class ServedFamily:
    """What the PyTorch backend does with one of our families."""

    id: str
    name: str
    architecture: str
    modality: str
    since: str | None
    lora: bool
    lora_target_modules: tuple[str, ...]
    llm_api_options: dict
    note: str

    def served_at(self, release: str) -> bool:
        if self.since is None:
            return False
        return tuple(int(x) for x in release.split(".")) >= tuple(int(x) for x in self.since.split("."))


@cache
def _backend() -> dict:
    return shipped_yaml(BACKEND_FILE.name)


def multimodal_options() -> dict:
    return dict(_backend().get("multimodal_options") or {})


@cache
def served_families() -> dict[str, ServedFamily]:
    """Every family the catalogue has a PyTorch-backend entry for, by id (display names from the family files)."""
    names = {fid: raw.get("display_name", fid) for fid, raw in family_files().items()}
    out = {}
    for fid, raw in _backend()["families"].items():
        out[fid] = ServedFamily(
            id=fid, name=names.get(fid, fid), architecture=str(raw["architecture"]), modality=raw["modality"],
            since=None if raw.get("since") is None else str(raw["since"]), lora=bool(raw.get("lora")),
            lora_target_modules=tuple(raw.get("lora_target_modules") or ()),
            llm_api_options=dict(raw.get("llm_api_options") or {}), note=raw["note"])
    return out


def family_note(family_id: str, version: str) -> str:
    """One honest sentence about the family on trtllm-serve at `version` (for the Build page)."""
    family = served_families().get(family_id)
    if family is None:
        return f"{family_id} has no entry in setup/data/pytorch_backend.yaml: trtllm-serve plans are not made for it."
    try:
        release = resolve_release(version)
    except ValueError as exc:
        return str(exc)
    if family.since is not None and not family.served_at(release.release):
        return f"{family.name} is served by the PyTorch backend from TensorRT-LLM {family.since}, not {release.release}."
    return family.note
