"""The plan's data: LlmApiKnobs (the engine-free kinds' common arguments), PlanError, Step (one argv with its inputs and outputs) and Plan (the ordered steps)."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from setup.catalog.builds import Family, TrtllmVersion
from setup.plan.config import PlanConfig


@dataclass
class LlmApiKnobs:
    """What an engine-free (LLM API) deployment serves and its LLM API arguments; None leaves the API's default.
    The Triton llmapi plan and the trtllm-serve plan both start from these."""

    family: str = ""
    checkpoint: str = ""
    trtllm_version: str = ""
    out: str = ""
    tp: int = 1
    pp: int = 1
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    max_seq_len: int | None = None
    kv_cache_fraction: float | None = None
    block_reuse: bool | None = None
    lora_dir: str | None = None
    max_lora_rank: int | None = None
    max_loras: int | None = None
    max_cpu_loras: int | None = None


class PlanError(ValueError):
    """The config cannot become a plan; `problems` holds one clear message per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Step:
    """One command of the plan. Outputs are files whose presence (with an unchanged hash) allows a skip."""

    id: str
    phase: str  # download | check | convert | adapter | build | visual | lora | repository | launch
    title: str
    argv: tuple[str, ...]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    cwd: str | None = None
    weight: float = 1.0
    service: bool = False  # runs until stopped (the server)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> Step:
        return cls(**{**raw, "argv": tuple(raw["argv"]), "inputs": tuple(raw.get("inputs", ())),
                      "outputs": tuple(raw.get("outputs", ()))})

    def shell_line(self) -> str:
        command = shlex.join(self.argv)
        if self.cwd:
            return f"(mkdir -p {shlex.quote(self.cwd)} && cd {shlex.quote(self.cwd)} && {command})"
        return command


@dataclass
class Plan:
    """Steps plus what was derived, the warnings, and what serves the family on Triton."""

    config: PlanConfig
    family: Family
    version: TrtllmVersion
    steps: list[Step]
    derived: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    triton_note: str = ""
    deployment: dict = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return Path(self.config.out).resolve()

    def build_steps(self) -> list[Step]:
        """Steps up to (not including) writing the repository."""
        return [s for s in self.steps if s.phase not in ("repository", "launch")]

    def deploy_steps(self) -> list[Step]:
        return [s for s in self.steps if s.phase in ("repository", "launch")]

    def config_hash(self) -> str:
        data = json.dumps({"family": self.family.id, "version": self.version.text,
                           "steps": [s.argv for s in self.build_steps()]}, sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def summary_lines(self) -> list[str]:
        d = self.derived
        lines = [f"{self.family.name} with TensorRT-LLM {self.version.text} ({self.version.era.label})",
                 f"dtype {d['dtype']}, world size {d['world_size']} (tp {self.config.tp} x pp {self.config.pp})"]
        if "max_multimodal_len" in d:
            lines.append(f"max multimodal length {d['max_multimodal_len']} = max batch {d['max_batch_size']} x "
                         f"{d['tokens_per_image']} tokens per image x {d['max_num_images']} image(s)")
        if "max_encoder_input_len" in d:
            lines.append(f"max encoder input length {d['max_encoder_input_len']}")
        if "max_output_len" in d:
            lines.append(f"max output length {d['max_output_len']} (= max_seq_len - max_input_len)")
        if "lora" in d:
            lora = d["lora"]
            lines.append(f"LoRA: {len(lora['adapters'])} adapter(s), max rank {lora['max_lora_rank']}")
        return lines

    def to_shell(self) -> str:
        """The plan as a runnable bash script: one command per line, every argument shell-quoted."""
        lines = ["#!/usr/bin/env bash", "# Build plan written by `python -m setup plan`."]
        lines += [f"# {_one_line(s)}" for s in self.summary_lines()]
        lines.append(f"# Triton: {_one_line(self.triton_note)}")
        lines += [f"# Warning: {_one_line(w)}" for w in self.warnings]
        lines.append("set -euo pipefail")
        # numbered as they run: "Run / resume" runs the build steps ([1/5] ... as its log says), then
        # "Write repository and launch" the deploy steps (numbered on their own)
        for part, steps in (("", self.build_steps()), ("deploy ", self.deploy_steps())):
            for number, step in enumerate(steps, 1):
                lines.append(f"# [{part}{number}/{len(steps)}] {_one_line(step.title)}")
                lines.append(step.shell_line())
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        return {"family": self.family.id, "version": self.version.text, "config_hash": self.config_hash(),
                "steps": [s.to_dict() for s in self.steps], "derived": self.derived,
                "warnings": self.warnings, "triton_note": self.triton_note}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
