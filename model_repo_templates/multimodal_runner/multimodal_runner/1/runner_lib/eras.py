"""The runner's release ("era"): the recorded constructor fields and method signatures (runner_eras.yaml, read at
release commits) whose `generate` and `run` parameters and video loader equal the installed class's, read with
inspect.signature."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ERAS_FILE = Path(__file__).resolve().parent.parent / "runner_eras.yaml"
MSG_NO_ERA = ("The installed {name} matches no recorded release of MultimodalModelRunner (generate{generate}, "
              "run{run}{loader}); recorded releases: {known}. Record this release's signatures in runner_eras.yaml.")
MSG_NOT_SERVED = "The installed {name} is the {era} runner: {why}"
MSG_BAD_CLASS = "runner_class must be 'module:Class' (got '{text}')."
MSG_NO_CLASS = "Cannot import the runner class '{text}': {detail}"
MSG_NOT_IMPORTABLE = " (recorded: {notes})"
MSG_ERA_NOT_FOR_FAMILY = ("The installed {name} is the {era} runner, but {family} is served only by the {allowed} "
                          "runner (runner_eras): the recorded runners of other releases do not handle this family.")


@dataclass(frozen=True)
class Era:
    """One era's contract: the args fields (with defaults), the methods' parameter names, what run returns."""

    name: str
    args: dict
    methods: dict
    sources: tuple[str, ...] = ()
    run_returns: tuple[str, ...] = ()
    served: bool = True
    why: str = ""
    streaming: dict = field(default_factory=dict)  # how this era's generate is redone with streaming (or empty)
    sampling_args: tuple[str, ...] = ()
    combined_engine_dir: bool = False
    handles: tuple[str, ...] = ()         # the model types its setup_inputs has a branch for
    per_slot_types: tuple[str, ...] = ()  # types whose setup_inputs reads one text and one picture per batch slot
    picture_sizes: dict = field(default_factory=dict)  # model type -> (width, height) the release sizes pictures to
    video_only_types: tuple[str, ...] = ()  # types whose runner reads a video and no picture (video-neva)

    def params(self, method: str) -> tuple[str, ...] | None:
        value = self.methods.get(method)
        if value is None:
            return None
        return tuple(value["params"] if isinstance(value, dict) else value)

    def method_name(self, role: str) -> str | None:
        """The method that plays `role` (load_video, load_audio, ...), or None when the era has none."""
        value = self.methods.get(role)
        return value["name"] if isinstance(value, dict) else None

    @property
    def takes_lora(self) -> bool:
        return "lora_task_uids" in self.args

    def sampling_defaults(self) -> dict:
        """The recorded default of each sampling field (run.py's)."""
        return {name: self.args[name] for name in self.sampling_args}

    def matches(self, runner_class: type) -> bool:
        """generate's and run's parameters are the recorded ones, and so is the video loader where one is recorded."""
        if parameter_names(getattr(runner_class, "generate", None)) != self.params("generate"):
            return False
        if parameter_names(getattr(runner_class, "run", None)) != self.params("run"):
            return False
        loader = self.method_name("load_video")
        return loader is None or parameter_names(getattr(runner_class, loader, None)) == self.params("load_video")


@dataclass(frozen=True)
class EraBook:
    """Every recorded era, in file order, and the sources they cite."""

    eras: tuple[Era, ...]
    sources: dict = field(default_factory=dict)
    llm_runners: dict = field(default_factory=dict)  # the LLM runners' recorded generate parameters (ModelRunnerCpp)
    not_importable: dict = field(default_factory=dict)  # releases with no importable runner -> why


def load_eras(path: Path = ERAS_FILE) -> EraBook:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    common, sampling = dict(raw.get("common_args") or {}), tuple(raw.get("sampling_args") or ())
    video_only = tuple(raw.get("video_only_types") or ())
    eras = tuple(
        Era(name=str(name), args={**common, **(entry.get("args") or {})}, methods=dict(entry["methods"]),
            sources=tuple(entry.get("sources") or ()), run_returns=tuple(entry.get("run_returns") or ()),
            served=bool(entry.get("served", True)), why=str(entry.get("why", "")),
            streaming=dict(entry.get("streaming") or {}),
            sampling_args=sampling, combined_engine_dir=entry.get("engine_dirs") == "combined",
            handles=tuple(entry.get("handles") or ()), per_slot_types=tuple(entry.get("per_slot_types") or ()),
            picture_sizes={k: tuple(v) for k, v in (entry.get("picture_sizes") or {}).items()},
            video_only_types=video_only)
        for name, entry in raw["eras"].items())
    return EraBook(eras=eras, sources=dict(raw.get("sources") or {}), llm_runners=dict(raw.get("llm_runners") or {}),
                   not_importable=dict(raw.get("not_importable") or {}))


def parameter_names(function) -> tuple[str, ...] | None:
    """The parameter names of a method as the class defines it (without self); None when there is no such method."""
    if function is None:
        return None
    names = tuple(inspect.signature(function).parameters)
    return names[1:] if names[:1] == ("self",) else names


def detect_era(runner_class: type, book: EraBook | None = None) -> Era:
    """The recorded release whose generate, run and video loader match `runner_class`'s (Era.matches); ValueError
    when none does, or when the matching one is a runner this model cannot serve."""
    book = book or load_eras()
    for era in book.eras:
        if era.matches(runner_class):
            if not era.served:
                raise ValueError(MSG_NOT_SERVED.format(name=runner_class.__name__, era=era.name, why=era.why))
            return era
    generate = parameter_names(getattr(runner_class, "generate", None))
    run = parameter_names(getattr(runner_class, "run", None))
    loaders = [f", {name}{_shown(parameter_names(getattr(runner_class, name, None)))}"
               for name in ("load_test_image", "load_test_data") if hasattr(runner_class, name)]
    raise ValueError(MSG_NO_ERA.format(name=runner_class.__name__, generate=_shown(generate), run=_shown(run),
                                       loader="".join(loaders), known=", ".join(e.name for e in book.eras)))


def parse_eras(text: str) -> tuple[str, ...]:
    """'1.x' or '0.16,1.x' -> ('1.x',) / ('0.16', '1.x'); empty means any served release. The one parsing rule: the
    repository writer's check (setup/repo/runner_checks.py) loads it from here."""
    return tuple(p.strip() for p in str(text or "").split(",") if p.strip())


def require_era(era: Era, allowed: tuple[str, ...], runner_class: type, family: str = "") -> None:
    """ValueError when the family is served only by other eras (`allowed`; empty allows every served era)."""
    if allowed and era.name not in allowed:
        raise ValueError(MSG_ERA_NOT_FOR_FAMILY.format(name=runner_class.__name__, era=era.name,
                                                       family=family or "this family", allowed=" or ".join(allowed)))


def _shown(names: tuple[str, ...] | None) -> str:
    return " (missing)" if names is None else f"({', '.join(names)})"


def import_runner_class(text: str, book: EraBook | None = None) -> type:
    """'package.module:Class' -> the class (the GPU default is tensorrt_llm.runtime:MultimodalModelRunner); the
    failure names the releases recorded without an importable runner (0.11)."""
    module_name, _, class_name = text.partition(":")
    if not module_name or not class_name:
        raise ValueError(MSG_BAD_CLASS.format(text=text))
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        notes = (book or load_eras()).not_importable
        hint = MSG_NOT_IMPORTABLE.format(notes=" ".join(f"{k}: {v}" for k, v in notes.items())) if notes else ""
        raise ValueError(MSG_NO_CLASS.format(text=text, detail=exc) + hint) from None
