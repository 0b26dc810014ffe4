"""The `args` object MultimodalModelRunner(args) reads: every field of the era (runner_eras.yaml) with its
recorded default, the engine folders where the era wants them, and the deployment's own settings."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from .eras import Era

MSG_UNKNOWN_SETTING = "'{name}' is not a field the {era} runner reads; its fields: {known}."
MSG_MISSING_DIR = "{name} {path} does not exist."
MSG_REQUIRED = ("The family requires {name}={required} (runner_required), but runner_settings sets {name}={given}; "
                "leave {name} out of runner_settings.")


@dataclass(frozen=True)
class EngineFolders:
    """Where the family's engines and Hugging Face folder are (the plan's visual_engine, engines/llm, checkpoint)."""

    visual_engine_dir: str
    llm_engine_dir: str
    hf_model_dir: str

    def check(self) -> None:
        for name, path in (("visual_engine_dir", self.visual_engine_dir), ("llm_engine_dir", self.llm_engine_dir),
                           ("hf_model_dir", self.hf_model_dir)):
            if not path or not Path(path).exists():
                raise ValueError(MSG_MISSING_DIR.format(name=name, path=path or "(unset)"))


def combined_engine_dir(folders: EngineFolders, parent: str | None = None) -> str:
    """A folder of two links, vision -> the visual engine and llm -> the LLM engine, as the late runner's
    engine_dir must be laid out (facts §1); made in a fresh temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="runner-engines-", dir=parent))
    os.symlink(Path(folders.visual_engine_dir).resolve(), root / "vision", target_is_directory=True)
    os.symlink(Path(folders.llm_engine_dir).resolve(), root / "llm", target_is_directory=True)
    return str(root)


def check_required(settings: dict, required: dict) -> None:
    """ValueError when `settings` gives a field the family requires (`required`) another value."""
    for name, value in required.items():
        if name in settings and settings[name] != value:
            raise ValueError(MSG_REQUIRED.format(name=name, required=value, given=settings[name]))


def build_args(era: Era, folders: EngineFolders, settings: dict | None = None,
               engine_dir: str | None = None, required: dict | None = None) -> SimpleNamespace:
    """The era's fields with their recorded defaults, the folders, then `settings` and the family's `required`
    values (only fields the era reads; a setting that contradicts a required value is refused). A required field
    this release does not read is left out: it states what the family needs where the field exists (qwen2_vl's
    session=cpp_llm_only is 1.x's field; 0.16 forces use_py_session off itself, R016:366-371)."""
    check_required(settings or {}, required or {})
    required = {name: value for name, value in (required or {}).items() if name in era.args}
    settings = {**(settings or {}), **required}
    values = dict(era.args)
    values["hf_model_dir"] = folders.hf_model_dir
    if era.combined_engine_dir:
        values["engine_dir"] = engine_dir or combined_engine_dir(folders)
    else:
        values.update(visual_engine_dir=folders.visual_engine_dir, llm_engine_dir=folders.llm_engine_dir)
    for name, value in settings.items():
        if name not in values:
            raise ValueError(MSG_UNKNOWN_SETTING.format(name=name, era=era.name, known=", ".join(sorted(values))))
        values[name] = value
    return SimpleNamespace(**values)


MSG_SETTINGS = "runner_settings must be name=value pairs separated by ';' (got '{text}')."


def parse_settings(text: str) -> dict:
    """'session=python;multi_block_mode=false' -> {'session': 'python', 'multi_block_mode': False}: each value read
    as JSON where it parses (numbers, true/false, null), else kept as text."""
    import json

    settings = {}
    for piece in (p.strip() for p in str(text or "").split(";")):
        if not piece:
            continue
        name, sep, value = piece.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(MSG_SETTINGS.format(text=text))
        try:
            settings[name.strip()] = json.loads(value.strip())
        except json.JSONDecodeError:
            settings[name.strip()] = value.strip()
    return settings
