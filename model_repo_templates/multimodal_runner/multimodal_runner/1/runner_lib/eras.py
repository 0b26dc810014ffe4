"""The runner's era: the recorded constructor fields and method signatures (runner_eras.yaml) whose `generate`
and `run` parameters equal the installed class's, read with inspect.signature."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ERAS_FILE = Path(__file__).resolve().parent.parent / "runner_eras.yaml"
MSG_NO_ERA = ("The installed {name} matches no recorded era of MultimodalModelRunner (generate{generate}, "
              "run{run}); recorded eras: {known}. Record this release's signatures in runner_eras.yaml.")
MSG_NOT_SERVED = "The installed {name} is the {era} runner: {why}"
MSG_BAD_CLASS = "runner_class must be 'module:Class' (got '{text}')."
MSG_NO_CLASS = "Cannot import the runner class '{text}': {detail}"
MSG_ERA_NOT_FOR_FAMILY = ("The installed {name} is the {era} runner, but {family} is served only by the {allowed} "
                          "runner (runner_eras): the recorded runners of other eras do not handle this family.")
MSG_BAD_ERAS = "runner_eras names {unknown}; recorded eras: {known}."


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


@dataclass(frozen=True)
class EraBook:
    """Every recorded era, in file order, and the sources they cite."""

    eras: tuple[Era, ...]
    sources: dict = field(default_factory=dict)
    llm_runners: dict = field(default_factory=dict)  # the LLM runners' recorded generate parameters (ModelRunnerCpp)


def load_eras(path: Path = ERAS_FILE) -> EraBook:
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    common, sampling = dict(raw.get("common_args") or {}), tuple(raw.get("sampling_args") or ())
    eras = tuple(
        Era(name=str(name), args={**common, **(entry.get("args") or {})}, methods=dict(entry["methods"]),
            sources=tuple(entry.get("sources") or ()), run_returns=tuple(entry.get("run_returns") or ()),
            served=bool(entry.get("served", True)), why=str(entry.get("why", "")),
            streaming=dict(entry.get("streaming") or {}),
            sampling_args=sampling, combined_engine_dir=entry.get("engine_dirs") == "combined")
        for name, entry in raw["eras"].items())
    return EraBook(eras=eras, sources=dict(raw.get("sources") or {}), llm_runners=dict(raw.get("llm_runners") or {}))


def parameter_names(function) -> tuple[str, ...] | None:
    """The parameter names of a method as the class defines it (without self); None when there is no such method."""
    if function is None:
        return None
    names = tuple(inspect.signature(function).parameters)
    return names[1:] if names[:1] == ("self",) else names


def detect_era(runner_class: type, book: EraBook | None = None) -> Era:
    """The recorded era whose generate and run parameters equal `runner_class`'s; ValueError when none does, or
    when the matching era is one this model cannot serve."""
    book = book or load_eras()
    generate = parameter_names(getattr(runner_class, "generate", None))
    run = parameter_names(getattr(runner_class, "run", None))
    for era in book.eras:
        if era.params("generate") == generate and era.params("run") == run:
            if not era.served:
                raise ValueError(MSG_NOT_SERVED.format(name=runner_class.__name__, era=era.name, why=era.why))
            return era
    raise ValueError(MSG_NO_ERA.format(name=runner_class.__name__, generate=_shown(generate), run=_shown(run),
                                       known=", ".join(e.name for e in book.eras)))


def parse_eras(text: str) -> tuple[str, ...]:
    """'late' or 'middle,late' -> ('late',) / ('middle', 'late'); empty means any served era."""
    return tuple(p.strip() for p in str(text or "").split(",") if p.strip())


def check_eras(allowed: tuple[str, ...], book: EraBook | None = None) -> None:
    """ValueError when `allowed` names an era runner_eras.yaml does not record."""
    known = [e.name for e in (book or load_eras()).eras]
    unknown = [name for name in allowed if name not in known]
    if unknown:
        raise ValueError(MSG_BAD_ERAS.format(unknown=", ".join(unknown), known=", ".join(known)))


def require_era(era: Era, allowed: tuple[str, ...], runner_class: type, family: str = "") -> None:
    """ValueError when the family is served only by other eras (`allowed`; empty allows every served era)."""
    if allowed and era.name not in allowed:
        raise ValueError(MSG_ERA_NOT_FOR_FAMILY.format(name=runner_class.__name__, era=era.name,
                                                       family=family or "this family", allowed=" or ".join(allowed)))


def _shown(names: tuple[str, ...] | None) -> str:
    return " (missing)" if names is None else f"({', '.join(names)})"


def import_runner_class(text: str) -> type:
    """'package.module:Class' -> the class (the GPU default is tensorrt_llm.runtime:MultimodalModelRunner)."""
    module_name, _, class_name = text.partition(":")
    if not module_name or not class_name:
        raise ValueError(MSG_BAD_CLASS.format(text=text))
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(MSG_NO_CLASS.format(text=text, detail=exc)) from None
