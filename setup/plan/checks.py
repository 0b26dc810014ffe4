"""Validation of a PlanConfig against its family and version, and the values derived from it.

Every problem is collected (one clear message each) so PlanError can report them together; the derived
values (world size, max multimodal length, encoder input length, LoRA cache sizes) are computed, not asked.
"""

from __future__ import annotations

import math
from pathlib import Path

from setup.catalog import messages as M
from setup.catalog.builds import Family, TrtllmVersion, families, resolve_version, version_key
from setup.catalog.checkpoint import Adapter, head_count, read_config, scan_adapters
from setup.catalog.family_data import family_files
from setup.hub.names import model_id_problem, revision_problem
from setup.paths import DATA_DIR
from setup.plan import messages as PM
from setup.plan.config import PlanConfig
from setup.repo.writer import parameter_specs
from setup.shipped import shipped_yaml

LIMIT_KEYS = ("max_batch_size", "max_input_len", "max_seq_len", "max_num_images", "max_num_tokens")
MAIN_ENGINES = ("llm", "decoder")
MIN_LORA_HOST_BYTES = 64 * 2**20
LORA_HOST_MARGIN = 1.25
TRUE_WORDS = ("true", "1", "yes")
EXAMPLE_SHAPES_FILE = DATA_DIR / "example_shapes.yaml"


def example_shapes(family_id: str) -> dict | None:
    """The config.json values of the family's example checkpoint kept in the catalogue (None: not kept)."""

    shapes = (shipped_yaml(EXAMPLE_SHAPES_FILE.name) or {}).get(family_id)
    return dict(shapes) if shapes else None


def wants_paged_context(params: dict) -> bool:
    """KV-cache reuse or chunked context asked for in the Triton parameters (both need paged context)."""
    return any(str(params.get(key, "")).lower() in TRUE_WORDS
               for key in ("enable_kv_cache_reuse", "enable_chunked_context"))


class PlanChecks:
    """One pass over a config: `resolve()`, then `check()`; problems and warnings are collected on the way."""

    def __init__(self, config: PlanConfig, checkpoint_optional: bool = False):
        self.c = config
        # A plan is useful before the download: a missing checkpoint is then a warning, shapes from the catalogue.
        # With a model id the plan's first step downloads the checkpoint: it need not be there yet.
        self.checkpoint_optional = checkpoint_optional or bool(config.model_id)
        self.config_where = str(Path(config.checkpoint or "") / "config.json")
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def resolve(self) -> tuple[Family, TrtllmVersion] | None:
        """The family and version of the config; None (with the problems recorded) when either is unknown."""
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
            return None
        return family, version

    def check(self, family: Family, version: TrtllmVersion) -> dict:
        """Validate everything and return the derived values (look at `problems` before using them)."""
        self.family, self.version, self.era = family, version, version.text
        self.dtype = self.c.dtype or family.default_dtype
        self.limits = self._limits()
        self.ckpt_config = self._check_paths(family)
        self._check_family()
        self.adapters = self._check_lora()
        derived = self._derive()
        self._check_triton(derived)
        return derived

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
        self._check_model_id(family)
        if not c.checkpoint:
            self.problems.append(M.MSG_NO_CHECKPOINT)
        else:
            path = Path(c.checkpoint)
            if not path.exists():
                if self.checkpoint_optional and family is not None:
                    return self._example_config(family, path)
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

    def _check_model_id(self, family: Family | None) -> None:
        c = self.c
        if not c.model_id:
            return
        problems = [model_id_problem(c.model_id), revision_problem(c.revision)]
        if family is not None and family.checkpoint_is_file:
            problems.append(M.MSG_MODEL_ID_NEMO.format(family=family.name))
        self.problems += [p for p in problems if p]

    def _example_config(self, family: Family, path: Path) -> dict | None:
        """The example checkpoint's shapes in place of the missing one, with the warning that says so."""
        shapes = None if family.checkpoint_is_file else example_shapes(family.id)
        if shapes is None:
            self.warnings.append(M.WARN_CHECKPOINT_NO_SHAPES.format(path=path, family=family.name))
            return None
        example = family.raw.get("example_checkpoint") or family.name
        listed = ", ".join(f"{key} {value}" for key, value in shapes.items())
        if self.c.model_id and Path(path).resolve() == Path(self.c.checkpoint).resolve():
            self.warnings.append(M.WARN_CHECKPOINT_DOWNLOADED.format(model_id=self.c.model_id, path=path,
                                                                     example=example, shapes=listed))
        else:
            self.warnings.append(M.WARN_CHECKPOINT_NOT_YET.format(path=path, example=example, shapes=listed))
        self.config_where = f"{example} (catalogue)"
        return shapes

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
                self.problems.append(M.MSG_TP_HEADS.format(tp=c.tp, heads=heads, config=self.config_where))
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
        runner = self.family.triton.get("topology") == "runner"
        if runner:
            if not self._runner_takes_lora():
                return []
        elif not lora.get("supported"):
            self.problems.append(M.MSG_LORA_UNSUPPORTED.format(family=self.family.name))
            return []
        if not Path(c.lora_dir).is_dir():
            return []
        adapters, problems = scan_adapters(Path(c.lora_dir))
        self.problems += problems
        if runner:  # recorded comma-separated in the config's lora_adapters string
            self.problems += [PM.MSG_RUNNER_LORA_NAME.format(name=a.name) for a in adapters
                              if any(ch in a.name for ch in ',"\\')]
        return adapters

    def _runner_takes_lora(self) -> bool:
        """A runner family bakes its adapters into the LLM engine (trtllm-build --lora_dir) where its path in the
        runner passes lora_uids: 1.x runners, decoder-only LLMs (not the family file's runner_llm.encoder_decoder),
        takes_lora not false (mllama). Else a problem sentence, False."""
        fam = self.family
        takes = str((fam.triton.get("parameters") or {}).get("takes_lora", "")).strip().lower()
        if (family_files().get(fam.id, {}).get("runner_llm") or {}).get("encoder_decoder"):
            why = "its LLM is encoder-decoder: EncDecModelRunner applies no LoRA"
        elif takes in ("false", "0", "no"):
            why = "its family file says takes_lora: false"
        elif self.version.key < version_key("1.0"):
            self.problems.append(PM.MSG_RUNNER_LORA_ERA.format(family=fam.name, version=self.version.text))
            return False
        else:
            return True
        self.problems.append(PM.MSG_RUNNER_LORA_FAMILY.format(family=fam.name, why=why))
        return False

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
        no_paged = any(e.flags_for(self.era).get("paged_kv_cache") == "disable"
                       for e in self.family.engines if e.name in MAIN_ENGINES)
        if wants_paged_context(params) and no_paged:
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

    # ----- warnings shown with the plan ---------------------------------------------------------------

    def family_warnings(self) -> list[str]:
        fam, warnings = self.family, []
        if fam.visual and not fam.visual.get("tokens_exact", True):
            warnings.append(M.WARN_TOKENS_BUDGET.format(family=fam.name, tokens=fam.tokens_per_image))
        if fam.raw.get("tokenizer_note") and not self.c.tokenizer_dir:
            warnings.append(M.WARN_TOKENIZER.format(note=fam.raw["tokenizer_note"]))
        return warnings + fam.notes(self.version)
