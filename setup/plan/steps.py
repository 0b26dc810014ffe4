"""The steps of a checked plan, each an argv list with its inputs and outputs: (download a model id ->) convert
checkpoint -> trtllm-build (per engine) -> visual engine (VLM families) -> LoRA conversion -> write repository -> launch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setup.catalog import messages as M
from setup.catalog.builds import EngineSpec, Family, TrtllmVersion, by_era
from setup.catalog.checkpoint import hidden_size
from setup.hub.names import DEFAULT_REVISION, MARKER
from setup.paths import TEMPLATES_DIR
from setup.plan.checks import MAIN_ENGINES, TRUE_WORDS, wants_paged_context
from setup.plan.config import PlanConfig
from setup.plan.scripts import ScriptFinder
from setup.plan.types import Step
from setup.repo.writer import family_parameters, load_template, template_defaults

# This project's own steps: its installed `setup` package, never a setup.py of the folder the app was started in
# (Python's -P: the working folder is not put first on the import path).
SETUP_COMMAND = (sys.executable, "-P", "-m", "setup")

STEP_WEIGHTS = {"download": 3.0, "check": 0.1, "convert": 2.0, "adapter": 0.1, "build": 5.0, "visual": 2.0, "lora": 0.5, "repository": 0.3, "launch": 1.0}
DEFAULT_MM_POOL_BYTES = 300_000_000  # the backend doc's example pool for multimodal deployments


def _parallel_args(tp: int | None, pp: int | None) -> list[str]:
    """--tp_size/--pp_size only above 1: 1 is every convert script's default, and some scripts of some
    releases do not take the flags at all (the old OPT script has --world_size instead)."""
    return [arg for flag, n in (("--tp_size", tp), ("--pp_size", pp)) if (n or 1) > 1 for arg in (flag, str(n))]


def flag_args(flags: dict, dtype: str, switches: tuple[str, ...] = ()) -> list[str]:
    """A flag mapping as argv: True -> a bare flag, a list -> several values, None/False -> left out.

    Flags in `switches` are bare switches in the chosen release: "enable" -> the bare flag, "disable" -> left out.
    """
    args: list[str] = []
    for name, value in flags.items():
        if name in switches and value in ("enable", "disable"):
            value = value == "enable"
        if value is True:
            args.append(f"--{name}")
        elif isinstance(value, list):
            args += [f"--{name}", *(str(v) for v in value)]
        elif value is not None and value is not False:
            args += [f"--{name}", str(value).replace("{dtype}", dtype)]
    return args


class StepBuilder:
    """Writes the steps of a config that passed its checks; fills `warnings` and `deployment` on the way."""

    def __init__(self, config: PlanConfig, family: Family, version: TrtllmVersion, dtype: str,
                 ckpt_config: dict | None):
        self.c, self.family, self.version, self.era = config, family, version, version.text
        self.dtype, self.ckpt_config = dtype, ckpt_config
        self.out = Path(config.out).resolve()
        self.warnings: list[str] = []
        self.deployment: dict = {}
        self.scripts = ScriptFinder(config.trtllm_root, version.text, version.era.examples_layout)

    def steps(self, d: dict) -> list[Step]:
        """Every step in order; `d` holds the derived values (a partial-LoRA adapter is added to it)."""
        steps = [self._convert_step(), *self._adapter_config_step()]
        steps += [self._build_step(e, d) for e in self.family.engines]
        if self.family.is_multimodal:
            steps.append(self._visual_step(d))
        steps += self._lora_steps(d)
        self.deployment = {}
        if self.family.triton_served(self.version):
            repository = self._repository_step(d)
            steps = [self._check_step(repository), *steps, repository, self._launch_step(d)]
        return [*self._download_step(), *steps]

    def _download_step(self) -> list[Step]:
        """With a model id, first: the checkpoint downloaded into the checkpoint folder (token from $HF_TOKEN,
        never an argument). Its output is the marker the download writes last."""
        c = self.c
        if not c.model_id:
            return []
        folder = Path(c.checkpoint).resolve()
        argv = (*SETUP_COMMAND, "download", "--model-id", c.model_id,
                "--revision", c.revision or DEFAULT_REVISION, "--dest", str(folder))
        return [Step("download", "download", f"Download {c.model_id} from the Hugging Face Hub", argv,
                     outputs=(str(folder / MARKER),), weight=STEP_WEIGHTS["download"])]

    @staticmethod
    def _check_step(repository: Step) -> Step:
        """The repository step as a dry run, first: a repository that cannot be written stops the plan early."""
        argv = (*repository.argv[:-1], "--dry-run")  # drop --force; nothing is written
        return Step("check-repository", "check", "Check the Triton repository config (dry run)", argv,
                    weight=STEP_WEIGHTS["check"])

    def _script(self, relative: str) -> str:
        return self.scripts.find(relative)

    @property
    def ckpt_out(self) -> Path:
        return self.out / "checkpoint"

    @property
    def adapter_out(self) -> Path:
        """Where a partial-LoRA family's conversion leaves its adapter (its working directory)."""
        return Path(self.c.lora_dir).resolve() if self.c.lora_dir else self.out / "lora_adapter"

    @property
    def visual_out(self) -> Path:
        return self.out / "visual_engine"

    # ----- engines ----------------------------------------------------------------------------------------

    def _convert_step(self) -> Step:
        c, fam = self.c, self.family
        conv = fam.convert
        argv = [c.trtllm_python, self._script(fam.convert_script(self.era)),
                conv.get("input_flag", "--model_dir"), str(Path(c.checkpoint).resolve()),
                "--output_dir", str(self.ckpt_out), "--dtype", self.dtype,
                *_parallel_args(c.tp, c.pp),
                *flag_args(conv.get("flags") or {}, self.dtype), *c.extra_convert_args]
        outputs = []
        for engine in fam.engines:
            where = self.ckpt_out / engine.checkpoint_subdir
            outputs += [str(where / "config.json")]
            outputs += [str(where / f"rank{r}.safetensors") for r in range((c.tp or 1) * (c.pp or 1))]
        cwd = None
        if conv.get("writes_adapter_to_cwd") and not c.lora_dir:
            cwd = str(self.adapter_out)
            written = "adapter_model.bin" if self._adapter_config_source() else "adapter_config.json"
            outputs.append(str(self.adapter_out / written))
        return Step("convert", "convert", "Convert the checkpoint", tuple(argv),
                    inputs=(str(Path(c.checkpoint).resolve()),), outputs=tuple(dict.fromkeys(outputs)), cwd=cwd,
                    weight=STEP_WEIGHTS["convert"])

    def _adapter_config_source(self) -> str | None:
        """The release's adapter_config.json to copy beside a converted adapter (the Njuapp fork), else None."""
        return by_era(self.family.convert.get("adapter_config_from"), self.era)

    def _adapter_config_step(self) -> list[Step]:
        source = self._adapter_config_source()
        if not source or self.c.lora_dir or not self.family.convert.get("writes_adapter_to_cwd"):
            return []
        src, dst = self._script(source), self.adapter_out / "adapter_config.json"
        return [Step("adapter-config", "adapter", "Copy the fork's adapter_config.json beside the converted adapter",
                     ("cp", src, str(dst)), inputs=(src,), outputs=(str(dst),), weight=STEP_WEIGHTS["adapter"])]

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

    @property
    def _runner(self) -> bool:
        return self.family.triton.get("topology") == "runner"

    def _lora_build_args(self, fixed: dict, d: dict) -> list[str]:
        lora = d.get("lora")
        if not lora:
            return []
        if self._runner:  # baked in: trtllm-build copies them into the engine (lora/0, lora/1, ...) in this order
            args = [] if "lora_plugin" in fixed else ["--lora_plugin", self.dtype]
            args += ["--lora_dir", *(a["path"] for a in lora["adapters"].values())]
            if lora["target_modules"]:
                args += ["--lora_target_modules", *lora["target_modules"]]
            return args + ["--max_lora_rank", str(lora["max_lora_rank"])]
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
                *flag_args(fixed, self.dtype, self.version.era.switch_flags), *self._limit_args(engine, fixed, d)]
        if engine.name in MAIN_ENGINES:
            argv += self._lora_build_args(fixed, d)
            if wants_paged_context(c.triton or {}):
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
        if not lora or self._runner:  # the runner's adapters are in the engine: nothing to convert for requests
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

    # ----- deployment -------------------------------------------------------------------------------------

    def _runner_parameters(self, d: dict) -> dict:
        """The runner topology's values: the three folders MultimodalModelRunner is built from. Encoder-decoder
        families (a decoder engine) give the runner the folder holding encoder/ and decoder/ (run.py's
        --llm_engine_dir); mllama's one cross-attention LLM engine is a decoder-only folder to the runner."""
        c, fam, era = self.c, self.family, self.version.era
        encoder_decoder = any(e.name == "decoder" for e in fam.engines)
        engines = self.out / "engines"
        checkpoint = Path(c.checkpoint).resolve()
        hf = Path(c.tokenizer_dir).resolve() if c.tokenizer_dir else checkpoint
        if not c.tokenizer_dir and self.family.checkpoint_is_file:
            hf = checkpoint.parent
            self.warnings.append(M.WARN_RUNNER_HF_DIR.format(folder=hf))
        params: dict[str, object] = {
            "visual_engine_dir": str(self.visual_out),
            "llm_engine_dir": str(engines if encoder_decoder else engines / fam.engines[0].name),
            "hf_model_dir": str(hf),
            "multimodal_family": fam.id,
            "max_num_images": d["max_num_images"],
        }
        if era.visual_engine_file != "model.engine":  # the runner's default name (facts §1)
            params["runner_settings"] = f"visual_engine_name={era.visual_engine_file}"
        if d.get("lora"):  # the adapters built into the LLM engine, in load order: lora_task_id 0, 1, ...
            params["lora_adapters"] = ",".join(d["lora"]["adapters"])
        params.update(family_parameters(fam))
        params.update({k: v for k, v in (c.triton or {}).items() if v not in (None, "")})
        return params

    def _deployment_parameters(self, d: dict) -> dict:
        c, fam, era = self.c, self.family, self.version.era
        if fam.triton.get("topology") == "runner":
            return self._runner_parameters(d)
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
        if fam.is_multimodal and self._has_encoder_model():
            params["multimodal_model_path"] = str(self.visual_out)  # our templates' name in every release
            params["max_num_images"] = d["max_num_images"]
        elif fam.is_multimodal:  # the visual engine runs inside preprocessing, which takes the engine file
            params["vit_plan_dir"] = str(self.visual_out / era.visual_engine_file)
            if d.get("lora") and not era.lora_prefetch:  # nothing loads the adapter at start: preprocessing sends it
                params["lora_weights_dir"] = str(self.out / "lora" / "1")
        if fam.is_multimodal:
            params["multimodal_family"] = fam.id  # the app reads it to prepare images for this family
            if fam.triton.get("hf_model_path"):
                params["hf_model_path"] = str(Path(c.checkpoint).resolve())
        # a template's own serving values (its template.yaml defaults) win over the derived ones, within the engine
        own = template_defaults(self._template)
        for key in [k for k in params if k in own]:
            params[key] = own[key]
        if "triton_max_batch_size" in own:
            params["triton_max_batch_size"] = min(int(own["triton_max_batch_size"]), int(d["max_batch_size"]))
        params.update(fam.triton.get("parameters") or {})
        params.update({k: v for k, v in (c.triton or {}).items() if v not in (None, "")})
        return params

    @property
    def _template(self) -> str:
        return self.family.triton.get("template", "inflight_batcher_llm")

    def _has_encoder_model(self) -> bool:
        """Whether the family's template has a multimodal_encoders model (else preprocessing runs the visual engine)."""
        return (TEMPLATES_DIR / self._template).is_dir() and "multimodal_encoders" in load_template(self._template).models

    def _repository_step(self, d: dict) -> Step:
        template = self._template
        params = self._deployment_parameters(d)
        self.deployment = {"template": template, "engine": "tensorrtllm", "parameters": params}
        if not (TEMPLATES_DIR / template).is_dir():
            self.warnings.append(M.WARN_TEMPLATE_MISSING.format(template=template))
        argv = [*SETUP_COMMAND, "repo", "--template", template, "--engine", "tensorrtllm",
                "--trtllm-version", self.version.text]
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
        written = "multimodal_runner" if self.family.triton.get("topology") == "runner" else "tensorrt_llm"
        return Step("repository", "repository", "Write the Triton model repository", tuple(argv),
                    inputs=tuple(inputs), outputs=(str(repo / written / "config.pbtxt"),),
                    weight=STEP_WEIGHTS["repository"])

    def _launch_step(self, d: dict) -> Step:
        c = self.c
        encoder = self.family.is_multimodal and self._has_encoder_model()
        names = list(self.family.triton.get("engine_models") or ["tensorrt_llm"] + (["multimodal_encoders"] if encoder else []))
        argv = [*SETUP_COMMAND, "launch", "--repo", str(self.out / "triton_repo"),
                "--world-size", str(d["world_size"]), "--engine-models", ",".join(names),
                "--http-port", str(c.http_port), "--grpc-port", str(c.grpc_port), "--metrics-port", str(c.metrics_port),
                "--log-file", str(self.out / "logs" / "triton.log")]
        if encoder:  # GPU tensors pass between models: the encoder's table to tensorrt_llm
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
