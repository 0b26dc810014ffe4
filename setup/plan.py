"""Planner: a PlanConfig becomes ordered steps (argv lists with inputs and outputs) for one TensorRT-LLM version.

Steps: convert checkpoint -> trtllm-build (per engine) -> visual engine (VLM families) -> LoRA conversion
-> write repository -> launch. Every problem in the config is collected and reported together (PlanError).
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from setup import build_messages as M
from setup.build_catalogue import EngineSpec, Family, TrtllmVersion, families, resolve_version, version_key
from setup.checkpoint_info import Adapter, head_count, hidden_size, read_config, scan_adapters
from setup.paths import TEMPLATES_DIR
from setup.plan_config import PlanConfig
from setup.repo import parameter_specs

LIMIT_KEYS = ("max_batch_size", "max_input_len", "max_seq_len", "max_num_images", "max_num_tokens")
STEP_WEIGHTS = {"convert": 2.0, "build": 5.0, "visual": 2.0, "lora": 0.5, "repository": 0.3, "launch": 1.0}
MAIN_ENGINES = ("llm", "decoder")
MIN_LORA_HOST_BYTES = 64 * 2**20
LORA_HOST_MARGIN = 1.25
DEFAULT_MM_POOL_BYTES = 300_000_000  # the backend doc's example pool for multimodal deployments
TRUE_WORDS = ("true", "1", "yes")


class PlanError(ValueError):
    """The config cannot become a plan; `problems` holds one clear message per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Step:
    """One command of the plan. Outputs are files whose presence (with an unchanged hash) allows a skip."""

    id: str
    phase: str  # convert | build | visual | lora | repository | launch
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
        for number, step in enumerate(self.steps, 1):
            lines.append(f"# [{number}/{len(self.steps)}] {_one_line(step.title)}")
            lines.append(step.shell_line())
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        return {"family": self.family.id, "version": self.version.text, "config_hash": self.config_hash(),
                "steps": [s.to_dict() for s in self.steps], "derived": self.derived,
                "warnings": self.warnings, "triton_note": self.triton_note}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _flag_args(flags: dict, dtype: str) -> list[str]:
    args: list[str] = []
    for name, value in flags.items():
        if value is True:
            args.append(f"--{name}")
        elif isinstance(value, list):
            args += [f"--{name}", *(str(v) for v in value)]
        elif value is not None and value is not False:
            args += [f"--{name}", str(value).replace("{dtype}", dtype)]
    return args


def triton_support(family: Family, version: TrtllmVersion) -> str:
    """What serves the family on Triton at this version, in one sentence or two (shown before anything runs)."""
    triton = family.triton
    if family.triton_served(version):
        return triton["note"]
    if triton.get("since"):
        return M.WARN_TRITON_TOO_OLD.format(family=family.name, since=triton["since"], version=version.text)
    return M.WARN_NOT_SERVED.format(note=triton.get("note", ""), instead=triton.get("instead", ""))


class _Planner:
    """Holds the state of one planning pass; `plan()` returns a Plan or raises PlanError."""

    def __init__(self, config: PlanConfig):
        self.c = config
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.deployment: dict = {}

    def plan(self) -> Plan:
        c = self.c
        family = families().get(c.family)
        if family is None:
            self.problems.append(M.MSG_UNKNOWN_FAMILY.format(family=c.family, choices=", ".join(families())))
        try:
            version = resolve_version(c.trtllm_version)
        except ValueError as exc:
            self.problems.append(str(exc))
            version = None
        if not c.out:
            self.problems.append(M.MSG_NO_OUT)
        if family is None or version is None:
            self._check_paths(None)
            raise PlanError(self.problems)
        self.family, self.version, self.era = family, version, version.era.key
        self.dtype = c.dtype or family.default_dtype
        self.limits = self._limits()
        self.ckpt_config = self._check_paths(family)
        self._check_family()
        self.adapters = self._check_lora()
        derived = self._derive()
        self._check_triton(derived)
        if self.problems:
            raise PlanError(self.problems)
        self.out = Path(c.out).resolve()
        steps = self._steps(derived)
        note = triton_support(family, version)
        self.warnings = [*self._family_warnings(), *self.warnings]
        return Plan(config=c, family=family, version=version, steps=steps, derived=derived,
                    warnings=self.warnings, triton_note=note, deployment=self.deployment)

    # ----- validation -----------------------------------------------------------------------------------

    def _limits(self) -> dict:
        limits = dict(self.family.defaults)
        limits.setdefault("max_num_images", 1 if self.family.is_multimodal else 0)
        for key in LIMIT_KEYS:
            if getattr(self.c, key) is not None:
                limits[key] = getattr(self.c, key)
        return limits

    def _check_paths(self, family: Family | None) -> dict | None:
        c = self.c
        config = None
        if not c.checkpoint:
            self.problems.append(M.MSG_NO_CHECKPOINT)
        else:
            path = Path(c.checkpoint)
            if not path.exists():
                self.problems.append(M.MSG_CHECKPOINT_MISSING.format(path=path))
            elif family is not None and family.checkpoint_is_file and not path.is_file():
                self.problems.append(M.MSG_CHECKPOINT_NOT_FILE.format(family=family.name, path=path))
            elif family is not None and not family.checkpoint_is_file and not path.is_dir():
                self.problems.append(M.MSG_CHECKPOINT_NOT_DIR.format(path=path))
            elif path.is_dir():
                config = read_config(path)
        if c.tokenizer_dir and not Path(c.tokenizer_dir).is_dir():
            self.problems.append(M.MSG_TOKENIZER_MISSING.format(path=c.tokenizer_dir))
        if c.lora_dir and not Path(c.lora_dir).is_dir():
            self.problems.append(M.MSG_LORA_MISSING.format(path=c.lora_dir))
        if family is not None and family.visual and family.visual.get("needs_vila_path"):
            if not c.vila_path:
                self.problems.append(M.MSG_VILA_PATH.format(family=family.name))
            elif not Path(c.vila_path).is_dir():
                self.problems.append(M.MSG_VILA_PATH_MISSING.format(path=c.vila_path))
        return config

    def _check_family(self) -> None:
        c, fam, lim = self.c, self.family, self.limits
        if self.version.key < version_key(fam.min_version):
            self.problems.append(M.MSG_FAMILY_TOO_NEW.format(family=fam.name, min_version=fam.min_version,
                                                             version=self.version.text))
        if self.dtype not in fam.dtypes:
            self.problems.append(M.MSG_DTYPE.format(family=fam.name, dtype=self.dtype, allowed=", ".join(fam.dtypes)))
        positive = {"tp": c.tp, "pp": c.pp, **{k: v for k, v in lim.items() if k != "max_num_images"}}
        if fam.is_multimodal:
            positive["max_num_images"] = lim["max_num_images"]
        bad = {k for k, v in positive.items() if v is None or v < 1}
        for name in sorted(bad):
            self.problems.append(M.MSG_POSITIVE.format(name=name, value=positive[name]))
        heads = head_count(self.ckpt_config)
        if c.tp and c.tp >= 1:
            if heads is None:
                if c.tp > 1 and Path(c.checkpoint or "").is_dir():
                    self.warnings.append(M.WARN_HEADS_UNKNOWN.format(config=Path(c.checkpoint) / "config.json"))
            elif heads % c.tp:
                self.problems.append(M.MSG_TP_HEADS.format(tp=c.tp, heads=heads,
                                                           config=Path(c.checkpoint) / "config.json"))
        if bad & {"max_seq_len", "max_input_len", "max_batch_size"}:
            return
        if lim["max_seq_len"] <= lim["max_input_len"]:
            self.problems.append(M.MSG_SEQ_LEN.format(seq=lim["max_seq_len"], inp=lim["max_input_len"]))
        if fam.is_multimodal and "max_num_images" not in bad:
            if lim["max_num_images"] > fam.max_images:
                self.problems.append(M.MSG_TOO_MANY_IMAGES.format(images=lim["max_num_images"], family=fam.name,
                                                                  limit=fam.max_images))
            if self._prompt_table():
                needed = fam.tokens_per_image * lim["max_num_images"]
                if lim["max_input_len"] < needed:
                    self.problems.append(M.MSG_INPUT_TOO_SHORT.format(
                        inp=lim["max_input_len"], tokens=fam.tokens_per_image, images=lim["max_num_images"],
                        needed=needed))

    def _prompt_table(self) -> bool:
        return any("max_multimodal_len" in e.limits for e in self.family.engines)

    def _check_lora(self) -> list[Adapter]:
        c, lora = self.c, self.family.lora
        if not c.lora_dir:
            return []
        if not lora.get("supported"):
            self.problems.append(M.MSG_LORA_UNSUPPORTED.format(family=self.family.name))
            return []
        if not Path(c.lora_dir).is_dir():
            return []
        adapters, problems = scan_adapters(Path(c.lora_dir))
        self.problems += problems
        return adapters

    def _max_lora_rank(self) -> int:
        if self.c.max_lora_rank is not None:
            return self.c.max_lora_rank
        if self.adapters:
            return max(a.rank for a in self.adapters)
        return int(self.family.lora.get("default_rank", 64))

    def _check_triton(self, derived: dict) -> None:
        params = self.c.triton or {}
        specs = parameter_specs()
        for name in params:
            if name not in specs:
                self.problems.append(M.MSG_UNKNOWN_TRITON.format(name=name))
        fraction = params.get("kv_cache_free_gpu_mem_fraction")
        if fraction not in (None, ""):
            try:
                ok = 0 < float(fraction) <= 1
            except (TypeError, ValueError):
                ok = False
            if not ok:
                self.problems.append(M.MSG_KV_FRACTION.format(value=fraction))
        batch = self.limits.get("max_batch_size")
        triton_batch = params.get("triton_max_batch_size")
        if triton_batch not in (None, "") and isinstance(batch, int):
            try:
                if int(triton_batch) > batch:
                    self.problems.append(M.MSG_TRITON_BATCH.format(value=triton_batch, engine=batch))
            except (TypeError, ValueError):
                self.problems.append(M.MSG_NOT_A_NUMBER.format(name="triton_max_batch_size", value=triton_batch))
        lora = derived.get("lora")
        cache_max = params.get("lora_cache_max_adapter_size")
        if lora and cache_max not in (None, ""):
            try:
                if int(cache_max) > lora["max_lora_rank"]:
                    self.problems.append(M.MSG_LORA_CACHE_RANK.format(size=cache_max, max_rank=lora["max_lora_rank"]))
            except (TypeError, ValueError):
                self.problems.append(M.MSG_NOT_A_NUMBER.format(name="lora_cache_max_adapter_size", value=cache_max))
        wants_paged = any(str(params.get(k, "")).lower() in TRUE_WORDS
                          for k in ("enable_kv_cache_reuse", "enable_chunked_context"))
        no_paged = any(e.flags_for(self.era).get("paged_kv_cache") == "disable"
                       for e in self.family.engines if e.name in MAIN_ENGINES)
        if wants_paged and no_paged:
            self.problems.append(M.MSG_KV_REUSE_NO_PAGED.format(family=self.family.name, version=self.version.text))

    # ----- derived values -------------------------------------------------------------------------------

    def _derive(self) -> dict:
        c, fam, lim = self.c, self.family, self.limits
        d = {"dtype": self.dtype, "world_size": (c.tp or 1) * (c.pp or 1), **lim}
        numbers_ok = all(isinstance(lim.get(k), int) for k in ("max_batch_size", "max_num_images"))
        if fam.is_multimodal and numbers_ok:
            d["tokens_per_image"] = fam.tokens_per_image
            if self._prompt_table():
                d["max_multimodal_len"] = lim["max_batch_size"] * fam.tokens_per_image * lim["max_num_images"]
            encoder = [e for e in fam.engines if e.encoder_input_len]
            if encoder:
                d["max_encoder_input_len"] = (fam.tokens_per_image * lim["max_num_images"]
                                              if encoder[0].encoder_input_len == "visual" else lim["max_input_len"])
            per_image = int(fam.visual.get("batch_per_image", 1))
            d["visual_max_batch_size"] = lim["max_batch_size"] * lim["max_num_images"] * per_image
        if self.version.era.seq_len_flag == "max_output_len" and isinstance(lim.get("max_seq_len"), int):
            d["max_output_len"] = lim["max_seq_len"] - lim["max_input_len"]
        if self.adapters or fam.lora.get("required"):
            d["lora"] = self._derive_lora()
        return d

    def _derive_lora(self) -> dict:
        rank = self._max_lora_rank()
        for adapter in self.adapters:
            if adapter.rank > rank:
                self.problems.append(M.MSG_LORA_RANK.format(name=adapter.name, rank=adapter.rank, max_rank=rank))
        modules = sorted({m for a in self.adapters for m in a.trt_modules}) or list(
            self.family.lora.get("target_modules") or [])
        largest = max((a.rank for a in self.adapters), default=rank)
        total = sum(a.weight_bytes for a in self.adapters)
        host = max(MIN_LORA_HOST_BYTES, math.ceil(total * LORA_HOST_MARGIN / 2**20) * 2**20)
        return {"adapters": {a.name: {"task_id": i, "rank": a.rank, "path": str(a.path)}
                             for i, a in enumerate(self.adapters, 1)},
                "max_lora_rank": rank, "target_modules": modules,
                "cache": {"lora_cache_optimal_adapter_size": largest, "lora_cache_max_adapter_size": largest,
                          "lora_cache_host_memory_bytes": host}}

    # ----- steps --------------------------------------------------------------------------------------------

    def _script(self, relative: str) -> str:
        return str(Path(self.c.trtllm_root).expanduser().resolve() / relative)

    def _steps(self, d: dict) -> list[Step]:
        steps = [self._convert_step()]
        steps += [self._build_step(e, d) for e in self.family.engines]
        if self.family.is_multimodal:
            steps.append(self._visual_step(d))
        steps += self._lora_steps(d)
        self.deployment = {}
        if self.family.triton_served(self.version):
            steps += [self._repository_step(d), self._launch_step(d)]
        return steps

    @property
    def ckpt_out(self) -> Path:
        return self.out / "checkpoint"

    @property
    def adapter_out(self) -> Path:
        """Where a partial-LoRA family's conversion leaves its adapter (its working directory)."""
        return Path(self.c.lora_dir).resolve() if self.c.lora_dir else self.out / "lora_adapter"

    def _convert_step(self) -> Step:
        c, fam = self.c, self.family
        conv = fam.convert
        argv = [c.trtllm_python, self._script(fam.convert_script(self.era)),
                conv.get("input_flag", "--model_dir"), str(Path(c.checkpoint).resolve()),
                "--output_dir", str(self.ckpt_out), "--dtype", self.dtype,
                "--tp_size", str(c.tp), "--pp_size", str(c.pp),
                *_flag_args(conv.get("flags") or {}, self.dtype), *c.extra_convert_args]
        outputs = []
        for engine in fam.engines:
            where = self.ckpt_out / engine.checkpoint_subdir
            outputs += [str(where / "config.json")]
            outputs += [str(where / f"rank{r}.safetensors") for r in range((c.tp or 1) * (c.pp or 1))]
        cwd = None
        if conv.get("writes_adapter_to_cwd") and not c.lora_dir:
            cwd = str(self.adapter_out)
            outputs.append(str(self.adapter_out / "adapter_config.json"))
        return Step("convert", "convert", "Convert the checkpoint", tuple(argv),
                    inputs=(str(Path(c.checkpoint).resolve()),), outputs=tuple(dict.fromkeys(outputs)), cwd=cwd,
                    weight=STEP_WEIGHTS["convert"])

    def _limit_args(self, engine: EngineSpec, fixed: dict, d: dict) -> list[str]:
        args: list[str] = []
        for name in engine.limits:
            if name in fixed:
                continue
            if name == "max_seq_len":
                flag = self.version.era.seq_len_flag
                if flag == "max_output_len":
                    value = d["max_seq_len"] - int(fixed.get("max_input_len", d["max_input_len"]))
                else:
                    value = d["max_seq_len"]
                args += [f"--{flag}", str(value)]
                continue
            value = d.get(name)
            if value is not None:
                args += [f"--{name}", str(value)]
        return args

    def _lora_build_args(self, fixed: dict, d: dict) -> list[str]:
        lora = d.get("lora")
        if not lora:
            return []
        if self.family.lora.get("partial"):
            args = [] if "lora_plugin" in fixed else ["--lora_plugin", self.dtype]
            return args + ["--lora_dir", str(self.adapter_out), "--max_lora_rank", str(lora["max_lora_rank"])]
        args = [] if "lora_plugin" in fixed else ["--lora_plugin", self.dtype]
        if lora["target_modules"]:
            args += ["--lora_target_modules", *lora["target_modules"]]
        return args + ["--max_lora_rank", str(lora["max_lora_rank"])]

    def _build_step(self, engine: EngineSpec, d: dict) -> Step:
        c = self.c
        fixed = engine.flags_for(self.era)
        checkpoint = self.ckpt_out / engine.checkpoint_subdir
        out = self.out / "engines" / engine.name
        argv = [c.trtllm_build, "--checkpoint_dir", str(checkpoint), "--output_dir", str(out),
                *_flag_args(fixed, self.dtype), *self._limit_args(engine, fixed, d)]
        if engine.name in MAIN_ENGINES:
            argv += self._lora_build_args(fixed, d)
            params = c.triton or {}
            if any(str(params.get(k, "")).lower() in TRUE_WORDS
                   for k in ("enable_kv_cache_reuse", "enable_chunked_context")):
                argv += ["--use_paged_context_fmha", "enable"]
        argv += c.extra_build_args
        world = d["world_size"]
        inputs = [str(checkpoint)]
        if engine.name in MAIN_ENGINES and d.get("lora") and self.family.lora.get("partial"):
            inputs.append(str(self.adapter_out))
        outputs = [str(out / "config.json"), *(str(out / f"rank{r}.engine") for r in range(world))]
        title = f"Build the {engine.name} engine" if len(self.family.engines) > 1 else "Build the LLM engine"
        return Step(f"build-{engine.name}", "build", title, tuple(argv), inputs=tuple(inputs),
                    outputs=tuple(outputs), weight=STEP_WEIGHTS["build"])

    @property
    def visual_out(self) -> Path:
        return self.out / "visual_engine"

    def _visual_step(self, d: dict) -> Step:
        c, fam, era = self.c, self.family, self.version.era
        argv = [c.trtllm_python, self._script(era.visual_builder), "--model_type", fam.visual_model_type(self.era),
                "--model_path", str(Path(c.checkpoint).resolve()), "--output_dir", str(self.visual_out),
                "--max_batch_size", str(d["visual_max_batch_size"])]
        if fam.visual.get("needs_vila_path"):
            argv += ["--vila_path", str(Path(c.vila_path).resolve())]
        outputs = [str(self.visual_out / "config.json")]
        if fam.visual_writes_engine(self.era):
            outputs.append(str(self.visual_out / era.visual_engine_file))
        outputs += [str(self.visual_out / f) for f in fam.visual.get("extra_outputs", []) if era.key != "0.11"]
        return Step("visual", "visual", "Build the visual engine", tuple(argv),
                    inputs=(str(Path(c.checkpoint).resolve()),), outputs=tuple(outputs), weight=STEP_WEIGHTS["visual"])

    def _lora_steps(self, d: dict) -> list[Step]:
        lora = d.get("lora")
        if not lora:
            return []
        sources = [(a["task_id"], name, Path(a["path"])) for name, a in lora["adapters"].items()]
        if self.family.lora.get("partial") and not sources:
            sources = [(1, "partial", self.adapter_out)]
            lora["adapters"] = {"partial": {"task_id": 1, "rank": lora["max_lora_rank"], "path": str(self.adapter_out)}}
        steps = []
        for task_id, name, path in sources:
            out = self.out / "lora" / str(task_id)
            argv = [self.c.trtllm_python, self._script(self.version.era.lora_converter), "-i", str(path),
                    "-o", str(out), "--storage-type", self.dtype]
            steps.append(Step(f"lora-{task_id}", "lora", f"Convert LoRA adapter '{name}' (task id {task_id})",
                              tuple(argv), inputs=(str(path),),
                              outputs=(str(out / "model.lora_weights.npy"), str(out / "model.lora_config.npy")),
                              weight=STEP_WEIGHTS["lora"]))
        return steps

    def _deployment_parameters(self, d: dict) -> dict:
        c, fam, era = self.c, self.family, self.version.era
        engines = {e.name: self.out / "engines" / e.name for e in fam.engines}
        main = next(engines[n] for n in MAIN_ENGINES if n in engines)
        params: dict[str, object] = {
            "engine_dir": str(main),
            "tokenizer_dir": str(Path(c.tokenizer_dir or c.checkpoint).resolve()),
            "triton_max_batch_size": d["max_batch_size"],
        }
        if "encoder" in engines:
            params["encoder_engine_dir"] = str(engines["encoder"])
        if d.get("lora"):
            params.update(d["lora"]["cache"])
            if era.lora_prefetch:
                params["lora_prefetch_dir"] = str(self.out / "lora")
        if fam.is_multimodal:
            params[era.multimodal_path_parameter] = str(self.visual_out)
            params["max_num_images"] = d["max_num_images"]
            if fam.triton.get("hf_model_path"):
                params["hf_model_path"] = str(Path(c.checkpoint).resolve())
        params.update(fam.triton.get("parameters") or {})
        params.update({k: v for k, v in (c.triton or {}).items() if v not in (None, "")})
        return params

    def _repository_step(self, d: dict) -> Step:
        template = self.family.triton.get("template", "inflight_batcher_llm")
        params = self._deployment_parameters(d)
        self.deployment = {"template": template, "engine": "tensorrtllm", "parameters": params}
        if not (TEMPLATES_DIR / template).is_dir():
            self.warnings.append(M.WARN_TEMPLATE_MISSING.format(template=template))
        if self.version.era.key != "0.19":
            self.warnings.append(M.WARN_OLD_TEMPLATES.format(version=self.version.text))
        argv = [sys.executable, "-m", "setup", "repo", "--template", template, "--engine", "tensorrtllm"]
        if str(params.get("decoupled_mode", "true")).lower() not in TRUE_WORDS:
            argv.append("--no-streaming")
        for key, value in params.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            argv += ["--set", f"{key}={text}"]
        repo = self.out / "triton_repo"
        argv += ["--out", str(repo), "--force"]
        inputs = [str(self.out / "engines")]
        if self.family.is_multimodal:
            inputs.append(str(self.visual_out))
        return Step("repository", "repository", "Write the Triton model repository", tuple(argv),
                    inputs=tuple(inputs), outputs=(str(repo / "tensorrt_llm" / "config.pbtxt"),),
                    weight=STEP_WEIGHTS["repository"])

    def _launch_step(self, d: dict) -> Step:
        c = self.c
        names = ["tensorrt_llm"] + (["multimodal_encoders"] if self.family.is_multimodal else [])
        argv = [sys.executable, "-m", "setup", "launch", "--repo", str(self.out / "triton_repo"),
                "--world-size", str(d["world_size"]), "--engine-models", ",".join(names),
                "--http-port", str(c.http_port), "--grpc-port", str(c.grpc_port), "--metrics-port", str(c.metrics_port),
                "--log-file", str(self.out / "logs" / "triton.log")]
        if self.family.is_multimodal:
            argv += ["--multimodal-gpu0-cuda-mem-pool-bytes", str(self._pool_bytes(d))]
        return Step("launch", "launch", "Launch Triton", tuple(argv), inputs=(str(self.out / "triton_repo"),),
                    weight=STEP_WEIGHTS["launch"], service=True)

    def _pool_bytes(self, d: dict) -> int:
        """At least 2 bytes x tokens per image x hidden x batch x images (the backend doc's sizing rule)."""
        hidden = hidden_size(self.ckpt_config)
        if not hidden:
            return DEFAULT_MM_POOL_BYTES
        need = 2 * self.family.tokens_per_image * hidden * d["max_batch_size"] * d["max_num_images"]
        return max(DEFAULT_MM_POOL_BYTES, need)

    def _family_warnings(self) -> list[str]:
        fam, warnings = self.family, []
        if fam.visual and not fam.visual.get("tokens_exact", True):
            warnings.append(M.WARN_TOKENS_BUDGET.format(family=fam.name, tokens=fam.tokens_per_image))
        if fam.raw.get("tokenizer_note") and not self.c.tokenizer_dir:
            warnings.append(M.WARN_TOKENIZER.format(note=fam.raw["tokenizer_note"]))
        return warnings + fam.notes(self.version)


def make_plan(config: PlanConfig) -> Plan:
    """The ordered steps for `config`; PlanError lists every problem found."""
    return _Planner(config).plan()
