"""Write a Triton model repository from model_repo_templates/, filled, validated and atomic."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from setup.fill import FillError, fill, placeholders
from setup.paths import DATA_DIR, TEMPLATES_DIR

ENGINES = {"tensorrtllm": None, "cpu": "cpu_engine"}  # engine -> overlay folder in the templates
STREAMING_MODELS = ("tensorrt_llm", "tensorrt_llm_bls")


class RepoError(ValueError):
    """The deployment config cannot become a valid repository; the message says why."""


@dataclass(frozen=True)
class ParameterSpec:
    name: str
    default: object = None
    required: bool = False
    help: str = ""


def parameter_specs() -> dict[str, ParameterSpec]:
    """Known placeholders with defaults and help, from setup/data/repo_parameters.yaml."""
    raw = yaml.safe_load((DATA_DIR / "repo_parameters.yaml").read_text())
    return {name: ParameterSpec(name=name, **fields) for name, fields in raw.items()}


@dataclass
class DeploymentConfig:
    """What a repository is written from (the `--config` YAML)."""

    template: str = "inflight_batcher_llm"
    engine: str = "tensorrtllm"
    streaming: bool = True
    parameters: dict[str, object] = field(default_factory=dict)
    models: dict[str, dict[str, object]] = field(default_factory=dict)

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
        unknown = set(raw) - {"template", "engine", "streaming", "parameters", "models"}
        if unknown:
            raise RepoError(f"Unknown keys in {path}: {', '.join(sorted(unknown))}.")
        return cls(**raw)


def _validate(config: DeploymentConfig, specs: dict[str, ParameterSpec], template_dir: Path) -> None:
    if config.engine not in ENGINES:
        raise RepoError(f"engine must be one of {', '.join(ENGINES)}, got '{config.engine}'.")
    if not template_dir.is_dir():
        raise RepoError(f"Template '{config.template}' does not exist in {TEMPLATES_DIR}.")
    unknown = sorted(set(config.parameters) - set(specs))
    for model, overrides in config.models.items():
        if not (template_dir / model).is_dir():
            raise RepoError(f"models.{model}: the template has no model named '{model}'.")
        unknown += [f"{model}.{k}" for k in overrides if k not in specs]
    if unknown:
        raise RepoError(f"Unknown parameters: {', '.join(unknown)} (see setup/data/repo_parameters.yaml).")


def _values_for(model: str, config: DeploymentConfig, specs: dict[str, ParameterSpec]) -> dict[str, object]:
    values = {name: spec.default for name, spec in specs.items() if spec.default is not None}
    values.update(config.parameters)
    values.update(config.models.get(model, {}))
    if config.engine == "cpu":
        values["triton_backend"] = "python"
    return values


def _check_streaming(config: DeploymentConfig, specs: dict[str, ParameterSpec]) -> None:
    if not config.streaming:
        return
    for model in STREAMING_MODELS:
        if str(_values_for(model, config, specs).get("decoupled_mode")).lower() not in ("true", "1"):
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


def render_model(model_dir: Path, config: DeploymentConfig, specs: dict[str, ParameterSpec]) -> str:
    """Filled and validated config.pbtxt text of one template model."""
    text = (model_dir / "config.pbtxt").read_text()
    optional = {n for n in placeholders(text) if n in specs and not specs[n].required}
    try:
        filled = fill(text, _values_for(model_dir.name, config, specs), optional)
    except FillError as exc:
        raise RepoError(f"{model_dir.name}/config.pbtxt: {exc}") from None
    parsed = parse_model_config(filled, f"{model_dir.name}/config.pbtxt")
    if parsed.name != model_dir.name:
        raise RepoError(f"{model_dir.name}/config.pbtxt names the model '{parsed.name}'.")
    return filled


def write_repository(config: DeploymentConfig, out: Path, force: bool = False) -> Path:
    """Render every model into a temporary folder, then move it into place as `out`."""
    specs = parameter_specs()
    template_dir = TEMPLATES_DIR / config.template
    _validate(config, specs, template_dir)
    _check_streaming(config, specs)
    out = Path(out).resolve()
    if out.exists() and not force:
        raise RepoError(f"{out} already exists; pass --force to replace it.")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for model_dir in sorted(p for p in template_dir.iterdir() if p.is_dir()):
            target = staging / model_dir.name
            shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("__pycache__", "config.pbtxt"))
            (target / "config.pbtxt").write_text(render_model(model_dir, config, specs))
        overlay = ENGINES[config.engine]
        if overlay:
            shutil.copytree(TEMPLATES_DIR / overlay, staging, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        for model in staging.iterdir():
            (model / "1").mkdir(exist_ok=True)
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
            staging.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
