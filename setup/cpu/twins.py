"""Which families have a CPU twin, and how each is served: the demo repository start_demo_triton writes for it
(`demo`), the app's deployment kind and model that talk to it. From the data: the cpu-ocr demo, the
InternLM-XComposer2 twin (setup/data/xcomposer2_demo.yaml), the runner families (triton.topology: runner in
their family files) and the template twins (setup/cpu/family_twins.py: families the backend's templates serve). The Build page's CPU demo button, its build_demo API and `python -m app --demo --twin NAME`
start them."""

from __future__ import annotations

from dataclasses import dataclass

from setup.cpu.family_twins import template_twins
from setup.cpu.messages import MSG_NO_TWIN
from setup.cpu.runner_demo import MODEL as RUNNER_MODEL
from setup.cpu.runner_demo import runner_families

CPU_OCR, XCOMPOSER2 = "cpu-ocr", "internlm-xcomposer2"


@dataclass(frozen=True)
class CpuTwin:
    family: str                     # the family id (the Build form's)
    demo: str                       # `--demo --twin` and start_demo_triton's `deployment`: engine, xcomposer2 or the family
    kind: str                       # the app's deployment kind for it: engine or runner
    model: str | None = None        # the model the chat talks to (None: the app's default)
    adapters_dir: str | None = None  # the twin's own adapters folder (XComposer2's Partial LoRA)
    model_adapter: str | None = None


def cpu_twins() -> dict[str, CpuTwin]:
    """Family id -> its CPU twin, for every family that has one."""
    from setup.cpu.xcomposer2_demo import twin_settings

    xc2 = twin_settings()
    twins = [CpuTwin(CPU_OCR, "engine", "engine"),
             CpuTwin(XCOMPOSER2, "xcomposer2", "engine", adapters_dir=str(xc2.adapters_path),
                     model_adapter=xc2.model_adapter)]
    twins += [CpuTwin(family, family, "runner", RUNNER_MODEL) for family in runner_families()]
    twins += [CpuTwin(family, family, "engine") for family in template_twins()]
    return {twin.family: twin for twin in twins}


def twin_for(family: str | None) -> CpuTwin:
    """The CPU twin of `family`; ValueError naming the families that have one when it has none."""
    twins = cpu_twins()
    if family not in twins:
        raise ValueError(MSG_NO_TWIN.format(family=family or "(no family)", known=", ".join(sorted(twins))))
    return twins[family]
