"""What a deployment will really do with an adapter: which of its LoRA weights it applies and which it drops
(with the share of the adapter's parameters each way), and the reasons it refuses one.

The target (`LoraTarget`) is what the deployment applies: a TensorRT-LLM engine or the CPU engine the modules
of its build_config.lora_config.lora_target_modules up to max_lora_rank; the llmapi model's PyTorch backend and
vLLM every language-model module (vLLM drops the modules of a VLM's vision tower, vllm#23796), with the shapes of a
model folder's config.json where the app has one. Every server here applies LoRA to the language model
only, so a tower's modules (vision_model.*, visual.*) and embedding LoRA are dropped and modules_to_save are
flagged (not applied). Refused: a PEFT type other than LORA, DoRA, a rank above max_lora_rank, and weights whose
shapes do not fit the served model (another base model).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from setup.lora.adapter_facts import AdapterFacts, LoraPart
from setup.lora.convert import HF_TO_TRT, LoraConvertError
from setup.lora.engine import load_engine_spec, module_shapes
from setup.lora.messages import (
    MSG_AUDIT_BASE_NAME,
    MSG_AUDIT_DORA,
    MSG_AUDIT_DROP_EMBEDDING,
    MSG_AUDIT_DROP_MODULE,
    MSG_AUDIT_DROP_OTHER,
    MSG_AUDIT_DROP_TOWER,
    MSG_AUDIT_DTYPE,
    MSG_AUDIT_LAYERS,
    MSG_AUDIT_NO_SHAPES,
    MSG_AUDIT_NOTHING_APPLIED,
    MSG_AUDIT_PEFT_TYPE,
    MSG_AUDIT_RANK,
    MSG_AUDIT_SAVED,
    MSG_AUDIT_SHAPE,
    MSG_AUDIT_SHAPES_UNCHECKED,
    MSG_AUDIT_VOCAB,
)
from setup.lora.module_paths import EMBEDDING, LANGUAGE, TOWER

TRTLLM_ENGINE, CPU_ENGINE = "TensorRT-LLM engine", "CPU engine"


@dataclass(frozen=True)
class LoraTarget:
    """What a deployment applies of an adapter; None where it cannot say."""

    server: str  # e.g. "TensorRT-LLM engine", "CPU engine", "vLLM"
    model: str = ""  # the served base model's name, for messages
    trt_modules: tuple[str, ...] | None = None  # None: every language-model module
    max_rank: int | None = None
    num_layers: int | None = None
    vocab_size: int | None = None
    dtype: str | None = None
    shapes: dict[str, tuple[int, int]] = field(default_factory=dict)  # TRT module -> (in, out)
    unchecked: str = ""  # why the model's shapes are unknown here (the audit says so); "" : the generic reason

    @property
    def knows_shapes(self) -> bool:
        """Whether an adapter for another base model can be told here (layers or module shapes known)."""
        return self.num_layers is not None or bool(self.shapes)

    def applies(self, module: str) -> bool:
        """Whether a language-model module (HF name) is applied."""
        if self.trt_modules is None:
            return True
        return HF_TO_TRT.get(module) in self.trt_modules

    def module_shape(self, module: str) -> tuple[int, int] | None:
        shape = self.shapes.get(HF_TO_TRT.get(module, ""))
        if shape and module == "gate_up_proj":
            return shape[0], 2 * shape[1]
        return shape


def engine_target(engine_dir: Path, server: str | None = None, model: str = "") -> LoraTarget:
    """The target of a TensorRT-LLM (or CPU) engine folder, from its config.json."""
    spec = load_engine_spec(Path(engine_dir))
    config = json.loads(spec.path.read_text())
    cpu = str(config.get("version", "")).startswith("cpu-engine")
    server = server or (CPU_ENGINE if cpu else TRTLLM_ENGINE)
    pretrained = config.get("pretrained_config", {})
    name = model or Path(str(config.get("hf_model_dir") or "")).name or Path(engine_dir).name
    shapes = {m: s for m in HF_TO_TRT.values() if (s := spec.module_shape(m)) is not None}
    return LoraTarget(server=server, model=name, trt_modules=spec.target_modules, max_rank=spec.max_rank,
                      num_layers=spec.num_layers, vocab_size=pretrained.get("vocab_size"), dtype=spec.dtype,
                      shapes=shapes)


def model_target(model_dir: Path, server: str, model: str = "") -> LoraTarget:
    """The target of a server that applies LoRA to every language-model module of a Hugging Face model folder (the
    llmapi model's PyTorch backend, vLLM): the shapes, layers and vocabulary from its config.json (a VLM's from
    its text_config); no rank limit known. LoraConvertError when the folder has no readable model config."""
    path = Path(model_dir) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        text = config.get("text_config") or config.get("llm_config") or config
        hidden, heads = int(text["hidden_size"]), int(text["num_attention_heads"])
        head = int(text.get("head_dim") or hidden // heads)
        q, kv = heads * head, int(text.get("num_key_value_heads") or heads) * head
        inter = int(text["intermediate_size"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoraConvertError(f"{path} cannot be read as a model config: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LoraConvertError(f"{path} is not a language model's config (missing or bad field {exc}).") from None
    shapes = module_shapes(hidden, inter, q, kv)
    vocab = text.get("vocab_size") or config.get("vocab_size")
    return LoraTarget(server=server, model=model or Path(model_dir).name, num_layers=int(text["num_hidden_layers"]),
                      vocab_size=int(vocab) if vocab else None,
                      shapes=shapes)  # the dtype: these servers cast an adapter to their own when they load it


def model_target_or_none(model_dir: Path, server: str, model: str = "") -> LoraTarget | None:
    """model_target, or None when the folder has no readable language model's config."""
    try:
        return model_target(model_dir, server, model)
    except LoraConvertError:
        return None


def target_or_none(engine_dir: Path | None, server: str | None = None) -> LoraTarget | None:
    """engine_target, or None when the folder has no readable engine config."""
    if engine_dir is None:
        return None
    try:
        return engine_target(engine_dir, server)
    except (LoraConvertError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class ModuleShare:
    """Modules applied or dropped together, with their LoRA parameters and, when dropped, why."""

    names: tuple[str, ...]
    params: int
    reason: str = ""


@dataclass(frozen=True)
class AdapterAudit:
    """The audit of one adapter against one target."""

    server: str
    base_model: str
    served_model: str
    rank: int
    dtype: str
    total_params: int
    applied: ModuleShare
    dropped: tuple[ModuleShare, ...] = ()
    flags: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()
    shapes_checked: bool = True  # False: the target knew no shapes (a flag says why)

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def partial(self) -> bool:
        """Applied, but only in part (some LoRA weights are dropped)."""
        return not self.refused and any(d.params for d in self.dropped)

    def percent(self, params: int) -> int:
        """A share of the adapter's LoRA parameters, in whole percent."""
        return round(100 * params / self.total_params) if self.total_params else 0

    @property
    def applied_percent(self) -> int:
        return self.percent(self.applied.params)


def _ordered(names: set[str]) -> tuple[str, ...]:
    order = list(HF_TO_TRT)
    return tuple(sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n)))


def _shape_problem(part: LoraPart, target: LoraTarget, base: str) -> str | None:
    """A sentence when a language-model pair does not fit the served model, else None."""
    if target.num_layers is not None and part.layer is not None and part.layer >= target.num_layers:
        return MSG_AUDIT_LAYERS.format(base=base, layer=part.layer, model=target.model, layers=target.num_layers)
    expected = target.module_shape(part.name)
    if expected and (part.in_size, part.out_size) != expected:
        return MSG_AUDIT_SHAPE.format(base=base, layer=part.layer, module=part.name, got_in=part.in_size,
                                      got_out=part.out_size, model=target.model, want_in=expected[0],
                                      want_out=expected[1])
    return None


def _embedding_problem(part: LoraPart, target: LoraTarget, base: str) -> str | None:
    if target.vocab_size and part.in_size != target.vocab_size:
        return MSG_AUDIT_VOCAB.format(base=base, got=part.in_size, model=target.model, want=target.vocab_size)
    return None


def _dropped(parts: list[LoraPart], target: LoraTarget) -> list[ModuleShare]:
    """The parts the target drops, grouped by the reason."""
    groups: dict[str, tuple[set[str], list[int]]] = {}
    for part in parts:
        if part.place == LANGUAGE and target.applies(part.name):
            continue
        if part.place == LANGUAGE:
            reason = MSG_AUDIT_DROP_MODULE.format(server=target.server, modules=", ".join(target.trt_modules or ()))
        else:
            reason = {TOWER: MSG_AUDIT_DROP_TOWER, EMBEDDING: MSG_AUDIT_DROP_EMBEDDING}.get(part.place,
                                                                                          MSG_AUDIT_DROP_OTHER)
        names, params = groups.setdefault(reason, (set(), []))
        names.add(part.name)
        params.append(part.params)
    return [ModuleShare(names=_ordered(names), params=sum(params), reason=reason)
            for reason, (names, params) in groups.items()]


def audit(facts: AdapterFacts, target: LoraTarget) -> AdapterAudit:
    """Audit an adapter against what a deployment applies."""
    base = facts.base_model or "(not recorded)"
    parts = list(facts.parts)
    refusals: list[str] = []
    if facts.peft_type != "LORA":
        refusals.append(MSG_AUDIT_PEFT_TYPE.format(kind=facts.peft_type))
    if facts.use_dora or facts.dora_weights:
        refusals.append(MSG_AUDIT_DORA)
    applied = [p for p in parts if p.place == LANGUAGE and target.applies(p.name)]
    rank = max((p.rank for p in applied), default=max((p.rank for p in parts), default=0))
    if target.max_rank and rank > target.max_rank:
        refusals.append(MSG_AUDIT_RANK.format(rank=rank, server=target.server, max_rank=target.max_rank))
    shape_problems = [_shape_problem(p, target, base) for p in applied]
    shape_problems += [_embedding_problem(p, target, base) for p in parts if p.place == EMBEDDING]
    refusals += list(dict.fromkeys(s for s in shape_problems if s))[:1]
    if not applied and not refusals:
        refusals.append(MSG_AUDIT_NOTHING_APPLIED.format(server=target.server))
    flags = []
    saved = sorted({s.name for s in facts.saved} | set(facts.modules_to_save))
    if saved:
        flags.append(MSG_AUDIT_SAVED.format(names=", ".join(saved), server=target.server))
    if facts.base_model and target.model and _short(facts.base_model) != _short(target.model) and not refusals \
            and target.knows_shapes:
        flags.append(MSG_AUDIT_BASE_NAME.format(base=facts.base_model, model=target.model))
    if target.dtype and facts.dtype != target.dtype:
        flags.append(MSG_AUDIT_DTYPE.format(dtype=facts.dtype, target=target.dtype))
    if not target.knows_shapes:
        flags.append(MSG_AUDIT_SHAPES_UNCHECKED.format(
            why=target.unchecked or MSG_AUDIT_NO_SHAPES.format(server=target.server)))
    return AdapterAudit(server=target.server, base_model=base, served_model=target.model or "unknown", rank=rank,
                        dtype=facts.dtype, total_params=sum(p.params for p in parts),
                        applied=ModuleShare(names=_ordered({p.name for p in applied}),
                                            params=sum(p.params for p in applied)),
                        dropped=tuple(_dropped(parts, target)), flags=tuple(flags), refusals=tuple(refusals),
                        shapes_checked=target.knows_shapes)


def _short(name: str) -> str:
    return Path(name.rstrip("/")).name.lower()
