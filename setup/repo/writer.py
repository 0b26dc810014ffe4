"""Write a Triton model repository from model_repo_templates/, filled, validated and atomic."""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.paths import DATA_DIR, TEMPLATES_DIR
from setup.repo.atomic import staged_folder
from setup.repo.family_lora import family_refuses_lora, without_lora
from setup.repo.fill import FillError, fill, placeholders
from setup.repo.messages import MSG_RUNTIME_UNKNOWN, MSG_SHARED_MISSING
from setup.repo.releases import apply_release, release_edits
from setup.repo.runtime import copy_runtime, declared_runtime, runtime_parts, unknown_parts

ENGINES = {"tensorrtllm": None, "cpu": "cpu_engine"}  # engine -> overlay folder in the templates (its template.yaml
#                                                    says which cpu_runtime parts its models import)
ENGINE_CONFIG_EXTRA = "config.extra.pbtxt"  # in an overlay model folder: text appended to that model's config
STREAMING_MODELS = ("tensorrt_llm", "tensorrt_llm_bls")
TEMPLATE_FILE = "template.yaml"  # optional: {base: <template>, defaults: {...}, checks: [...], inherit_checks: bool,
#                                            shared: {<model>: [<file of SHARED_DIR>, ...]},
#                                            runtime: {<model>: [<part of cpu_runtime>, ...]}}
SHARED_DIR = TEMPLATES_DIR / "shared"  # helper files several model folders use, copied into each (not a template)


class RepoError(ValueError):
    """The deployment config cannot become a valid repository; the message says why."""


@dataclass(frozen=True)
class ParameterSpec:
    name: str
    default: object = None
    required: bool = False
    help: str = ""


@cache
def _parsed_yaml(path: Path, stamp: tuple[int, int]) -> object:
    return yaml.safe_load(path.read_text())


def read_yaml(path: Path) -> object:
    """A YAML file's data, parsed once per version of the file (the Build page asks for the same few files
    dozens of times when the app starts); each caller gets its own copy."""
    stat = path.stat()
    return copy.deepcopy(_parsed_yaml(path, (stat.st_mtime_ns, stat.st_size)))


def parameter_specs() -> dict[str, ParameterSpec]:
    """Known placeholders with defaults and help, from setup/data/repo_parameters.yaml."""
    raw = read_yaml(DATA_DIR / "repo_parameters.yaml")
    return {name: ParameterSpec(name=name, **fields) for name, fields in raw.items()}


@dataclass
class DeploymentConfig:
    """What a repository is written from (the `--config` YAML)."""

    template: str = "inflight_batcher_llm"
    engine: str = "tensorrtllm"
    streaming: bool = True
    parameters: dict[str, object] = field(default_factory=dict)
    models: dict[str, dict[str, object]] = field(default_factory=dict)
    trtllm_version: str | None = None  # the release whose tensor names are written (None: the templates' own)

    @classmethod
    def from_yaml(cls, path: Path) -> DeploymentConfig:
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise RepoError(f"Config file {path} does not exist.") from None
        except yaml.YAMLError as exc:
            raise RepoError(f"Config file {path} is not valid YAML: {exc}") from None
        if not isinstance(raw, dict):
            raise RepoError(f"Config file {path} must hold a mapping at the top level.")
        unknown = set(raw) - {"template", "engine", "streaming", "parameters", "models", "trtllm_version"}
        if unknown:
            raise RepoError(f"Unknown keys in {path}: {', '.join(sorted(unknown))}.")
        return cls(**raw)


@dataclass(frozen=True)
class TemplateSet:
    """A template folder, resolved through its `base` chain: model name -> folders, base first."""

    name: str
    models: dict[str, tuple[Path, ...]]
    defaults: dict[str, object]
    checks: tuple[str, ...]
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # model -> files of SHARED_DIR for its 1/
    runtime: dict[str, tuple[str, ...]] = field(default_factory=dict)  # model -> cpu_runtime parts for its 1/

    def config_path(self, model: str) -> Path:
        return next(d / "config.pbtxt" for d in reversed(self.models[model]) if (d / "config.pbtxt").is_file())


def load_template(name: str, _seen: tuple[str, ...] = ()) -> TemplateSet:
    """Read model_repo_templates/<name>, merging the models of its `base` template under its own."""
    folder = TEMPLATES_DIR / name
    if not folder.is_dir():
        raise RepoError(f"Template '{name}' does not exist in {TEMPLATES_DIR}.")
    if name in _seen:
        raise RepoError(f"Template '{name}' is its own base ({' -> '.join((*_seen, name))}).")
    meta_path = folder / TEMPLATE_FILE
    meta = (read_yaml(meta_path) or {}) if meta_path.is_file() else {}
    models: dict[str, tuple[Path, ...]] = {}
    defaults: dict[str, object] = {}
    checks: tuple[str, ...] = ()
    shared: dict[str, tuple[str, ...]] = {}
    runtime: dict[str, tuple[str, ...]] = {}
    if meta.get("base"):
        base = load_template(str(meta["base"]), (*_seen, name))
        models, defaults, checks = dict(base.models), dict(base.defaults), base.checks
        shared, runtime = dict(base.shared), dict(base.runtime)
    for model_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        models[model_dir.name] = (*models.get(model_dir.name, ()), model_dir)
    defaults.update(meta.get("defaults") or {})
    if meta.get("inherit_checks") is False:  # a twin with its own checks (e.g. internlm_xcomposer2_cpu)
        checks = ()
    checks += tuple(c for c in meta.get("checks") or () if c not in checks)
    for model, files in (meta.get("shared") or {}).items():
        shared[model] = (*shared.get(model, ()), *(f for f in files if f not in shared.get(model, ())))
    for model, parts in declared_runtime(folder).items():
        runtime[model] = (*runtime.get(model, ()), *(p for p in parts if p not in runtime.get(model, ())))
    return TemplateSet(name=name, models=models, defaults=defaults, checks=checks, shared=shared, runtime=runtime)


def copy_shared_files(template: TemplateSet, repo: Path) -> None:
    """Copy the helper files a template's models share (model_repo_templates/shared/) into each model's 1/ folder:
    every model folder stands alone at run time, and the helpers are written once."""
    for model, files in sorted(template.shared.items()):
        if not (repo / model).is_dir():
            continue
        for file in files:
            source = SHARED_DIR / file
            if not source.is_file():
                raise RepoError(MSG_SHARED_MISSING.format(template=template.name, file=file, model=model, path=source))
            (repo / model / "1").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, repo / model / "1" / file)


def runtime_for(template: TemplateSet, engine: str) -> dict[str, tuple[str, ...]]:
    """Model -> the cpu_runtime parts its 1/ folder gets: the template's own, then the engine overlay's."""
    overlay = ENGINES.get(engine)
    runtime = {model: parts for model, parts in template.runtime.items() if model in template.models}
    for model, parts in (declared_runtime(TEMPLATES_DIR / overlay) if overlay else {}).items():
        if model in template.models:
            runtime[model] = (*runtime.get(model, ()), *(p for p in parts if p not in runtime.get(model, ())))
    for model, parts in runtime.items():
        unknown = unknown_parts(parts)
        if unknown:
            raise RepoError(MSG_RUNTIME_UNKNOWN.format(template=template.name, model=model, parts=", ".join(unknown),
                                                       known=", ".join(runtime_parts())))
    return runtime


def template_defaults(name: str) -> dict[str, object]:
    """The deployment parameters a template sets itself (its template.yaml `defaults`, base first)."""
    specs = parameter_specs()
    return {k: v for k, v in load_template(name).defaults.items() if k in specs}


def declared_parameters(name: str) -> set[str]:
    """The parameters a template's model configs use (their ${...} placeholders)."""
    template = load_template(name)
    return set().union(*(placeholders(template.config_path(m).read_text()) for m in template.models))


def family_parameters(family) -> dict[str, object]:
    """A family's own Triton parameters; for the runner topology only those the runner model declares (mllama's
    image-view fact encoder_input_features_data_type is for the multimodal templates, not the runner)."""
    given = dict(family.triton.get("parameters") or {})
    if family.triton.get("topology") != "runner":
        return given
    declared = declared_parameters(str(family.triton.get("template", "inflight_batcher_llm")))
    return {k: v for k, v in given.items() if k in declared}


def family_deployment(family_id: str) -> tuple[str, dict[str, object]]:
    """(template, parameters) a family's repository is written with: its template's defaults, then the family's
    own Triton parameters (what `repo --family` and the Build page start from)."""
    from setup.catalog.builds import families
    from setup.repo import messages as M

    known = families()
    if family_id not in known:
        raise RepoError(M.MSG_FAMILY_UNKNOWN.format(family=family_id, known=", ".join(known)))
    family = known[family_id]
    triton = family.triton
    if triton.get("refused") or not triton.get("since"):
        raise RepoError(M.MSG_FAMILY_NOT_SERVED.format(family=family.name,
                                                       note=triton.get("refused") or triton.get("note", "")))
    template = str(triton.get("template", "inflight_batcher_llm"))
    parameters = {**template_defaults(template), **family_parameters(family)}
    if family.is_multimodal:
        parameters["multimodal_family"] = family.id
    return template, parameters


def _validate(config: DeploymentConfig, specs: dict[str, ParameterSpec], template: TemplateSet) -> None:
    if config.engine not in ENGINES:
        raise RepoError(f"engine must be one of {', '.join(ENGINES)}, got '{config.engine}'.")
    runtime_for(template, config.engine)
    unknown = sorted(set(config.parameters) - set(specs))
    for model, overrides in config.models.items():
        if model not in template.models:
            raise RepoError(f"models.{model}: the template has no model named '{model}'.")
        unknown += [f"{model}.{k}" for k in overrides if k not in specs]
    if unknown:
        raise RepoError(f"Unknown parameters: {', '.join(unknown)} (see setup/data/repo_parameters.yaml).")


def _values_for(model: str, config: DeploymentConfig, specs: dict[str, ParameterSpec],
                template: TemplateSet | None = None) -> dict[str, object]:
    values = {name: spec.default for name, spec in specs.items() if spec.default is not None}
    values.update(template.defaults if template else {})
    values.update(config.parameters)
    values.update(config.models.get(model, {}))
    if config.engine == "cpu":
        values["triton_backend"] = "python"
    return values


def _check_streaming(config: DeploymentConfig, specs: dict[str, ParameterSpec], template: TemplateSet) -> None:
    if not config.streaming:
        return
    for model in STREAMING_MODELS:
        if str(_values_for(model, config, specs, template).get("decoupled_mode")).lower() not in ("true", "1"):
            raise RepoError(
                f"Streaming was asked for, but {model} has decoupled_mode false: streaming needs "
                "decoupled_mode: true (or set streaming: false)."
            )


def parse_model_config(text: str, where: str) -> model_config_pb2.ModelConfig:
    """Parse config.pbtxt text exactly as Triton would; RepoError with the position on failure."""
    try:
        return text_format.Parse(text, model_config_pb2.ModelConfig())
    except text_format.ParseError as exc:
        raise RepoError(f"{where}: not a valid model config: {exc}") from None


def render_model(model: str, config: DeploymentConfig, specs: dict[str, ParameterSpec],
                 template: TemplateSet | None = None) -> str:
    """Filled and validated config.pbtxt text of one template model."""
    template = template or load_template(config.template)
    text = template.config_path(model).read_text()
    overlay = ENGINES.get(config.engine)
    extra = TEMPLATES_DIR / overlay / model / ENGINE_CONFIG_EXTRA if overlay else None
    if extra is not None and extra.is_file():  # engine-only inputs/outputs, appended to the model's config
        text += "\n" + extra.read_text()
    optional = {n for n in placeholders(text) if n in specs and not specs[n].required}
    try:
        filled = fill(text, _values_for(model, config, specs, template), optional)
    except FillError as exc:
        raise RepoError(f"{model}/config.pbtxt: {exc}") from None
    parsed = parse_model_config(filled, f"{model}/config.pbtxt")
    if parsed.name != model:
        raise RepoError(f"{model}/config.pbtxt names the model '{parsed.name}'.")
    try:
        edits = release_edits(config.trtllm_version) if config.engine == "tensorrtllm" else {}
    except ValueError as exc:
        raise RepoError(str(exc)) from None
    if family_refuses_lora(_values_for(model, config, specs, template).get("multimodal_family")):
        filled = without_lora(model, filled)
    return apply_release(model, filled, edits)


def dry_run(config: DeploymentConfig) -> None:
    """Every check the writer makes before reading engine files: parameters, streaming, each model's config."""
    specs = parameter_specs()
    template = load_template(config.template)
    _validate(config, specs, template)
    _check_streaming(config, specs, template)
    for model in sorted(template.models):
        render_model(model, config, specs, template)


def _run_checks(config: DeploymentConfig, specs: dict[str, ParameterSpec], template: TemplateSet) -> None:
    from setup.repo.multimodal_checks import check_multimodal
    from setup.repo.runner_checks import check_runner
    from setup.repo.xcomposer2_checks import check_xcomposer2, check_xcomposer2_cpu

    checks = {"multimodal": check_multimodal, "xcomposer2": check_xcomposer2, "xcomposer2_cpu": check_xcomposer2_cpu,
              "runner": check_runner}
    for name in template.checks:
        if name not in checks:
            raise RepoError(f"Template '{template.name}' asks for an unknown check '{name}'.")
        try:
            checks[name](_values_for("", config, specs, template))
        except ValueError as exc:
            raise RepoError(str(exc)) from None


def write_repository(config: DeploymentConfig, out: Path, force: bool = False) -> Path:
    """Render every model into a temporary folder, then move it into place as `out`."""
    specs = parameter_specs()
    template = load_template(config.template)
    _validate(config, specs, template)
    _check_streaming(config, specs, template)
    _run_checks(config, specs, template)
    out = Path(out).resolve()
    if out.exists() and not force:
        raise RepoError(f"{out} already exists; pass --force to replace it.")
    with staged_folder(out) as staging:
        skip = shutil.ignore_patterns("__pycache__", "config.pbtxt", TEMPLATE_FILE)
        for model, folders in sorted(template.models.items()):
            target = staging / model
            for folder in folders:
                shutil.copytree(folder, target, ignore=skip, dirs_exist_ok=True)
            (target / "config.pbtxt").write_text(render_model(model, config, specs, template))
        overlay = ENGINES[config.engine]
        if overlay:  # engine-specific model code, for the models this repository has
            for folder in sorted(p for p in (TEMPLATES_DIR / overlay).iterdir() if p.is_dir()):
                if folder.name in template.models:
                    shutil.copytree(folder, staging / folder.name, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("__pycache__", ENGINE_CONFIG_EXTRA))
        copy_shared_files(template, staging)
        for model, parts in sorted(runtime_for(template, config.engine).items()):
            copy_runtime(staging / model / "1", parts)
        for model in staging.iterdir():
            (model / "1").mkdir(exist_ok=True)
    return out
