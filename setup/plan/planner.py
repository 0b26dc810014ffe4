"""Planner: a PlanConfig becomes ordered steps (argv lists with inputs and outputs) for one TensorRT-LLM version.

Steps: convert checkpoint -> trtllm-build (per engine) -> visual engine (VLM families) -> LoRA conversion
-> write repository -> launch. Every problem in the config is collected and reported together (PlanError).

The work is split by job: setup/plan/checks.py validates the config and derives the computed values,
setup/plan/steps.py writes the steps, setup/plan/types.py holds PlanError, Step and Plan (re-exported here).
"""

from __future__ import annotations

from setup.catalog import messages as M
from setup.catalog.builds import Family, TrtllmVersion
from setup.plan.checks import PlanChecks
from setup.plan.config import PlanConfig
from setup.plan.steps import StepBuilder
from setup.plan.types import Plan, PlanError, Step
from setup.repo.writer import DeploymentConfig, RepoError, dry_run

__all__ = ["Plan", "PlanConfig", "PlanError", "Step", "make_plan", "triton_support"]


def triton_support(family: Family, version: TrtllmVersion) -> str:
    """What serves the family on Triton at this version, in one sentence or two (shown before anything runs)."""
    triton = family.triton
    if triton.get("refused"):
        return M.WARN_REFUSED.format(family=family.name, reason=triton["refused"])
    if family.triton_served(version):
        return triton["note"]
    if triton.get("since"):
        return M.WARN_TRITON_TOO_OLD.format(family=family.name, since=triton["since"], version=version.text)
    return M.WARN_NOT_SERVED.format(note=triton.get("note", ""), instead=triton.get("instead", ""))


def _repository_problems(deployment: dict, version: TrtllmVersion) -> list[str]:
    """The repository step's dry run, at plan time: what would stop it after the engines are built."""
    if not deployment:
        return []
    config = DeploymentConfig(template=deployment["template"], engine=deployment["engine"],
                              parameters=dict(deployment["parameters"]), trtllm_version=version.text)
    config.streaming = str(config.parameters.get("decoupled_mode", "true")).lower() in ("true", "1", "yes")
    try:
        dry_run(config)
    except RepoError as exc:
        return [M.MSG_REPOSITORY_WOULD_FAIL.format(reason=exc)]
    return []


def make_plan(config: PlanConfig, checkpoint_optional: bool = False) -> Plan:
    """The ordered steps for `config`; PlanError lists every problem found.

    With `checkpoint_optional` a checkpoint folder that does not exist yet is a warning (the plan uses the
    catalogue's shapes of the family's example checkpoint); runs keep it a problem."""
    checks = PlanChecks(config, checkpoint_optional)
    resolved = checks.resolve()
    if resolved is None:
        raise PlanError(checks.problems)
    family, version = resolved
    derived = checks.check(family, version)
    if checks.problems:
        raise PlanError(checks.problems)
    builder = StepBuilder(config, family, version, checks.dtype, checks.ckpt_config)
    steps = builder.steps(derived)
    problems = builder.scripts.problems + _repository_problems(builder.deployment, version)
    if problems:
        raise PlanError(problems)
    note = builder.scripts.note()
    warnings = [*checks.family_warnings(), *checks.warnings, *builder.warnings, *([note] if note else [])]
    return Plan(config=config, family=family, version=version, steps=steps, derived=derived,
                warnings=warnings, triton_note=triton_support(family, version), deployment=builder.deployment)
