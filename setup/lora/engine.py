"""LoRA against an engine: what its config.json allows (rank, modules, dtype, base shape), the checks,
and the CLI's convert-check-write job."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from setup.lora.convert import (
    TRT_MODULE_NAMES,
    TRT_TO_HF,
    ConvertedLora,
    LoraConvertError,
    convert_peft,
    save_converted,
)


@dataclass(frozen=True)
class EngineLoraSpec:
    """What an engine's config.json says about LoRA and the base model's shape."""

    path: Path
    dtype: str
    max_rank: int
    target_modules: tuple[str, ...]
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_size: int

    def module_shape(self, trt_module: str) -> tuple[int, int] | None:
        """(in, out) sizes of a module in the full (un-split) model; None when unknown."""
        q, kv = self.num_heads * self.head_size, self.num_kv_heads * self.head_size
        return module_shapes(self.hidden_size, self.intermediate_size, q, kv).get(trt_module)


def module_shapes(hidden: int, intermediate: int, q: int, kv: int) -> dict[str, tuple[int, int]]:
    """(in, out) sizes of each TensorRT-LLM LoRA module of a decoder with these widths (q, kv: the query's and each
    of key's and value's projection widths, heads x head size)."""
    h, inter = hidden, intermediate
    return {"attn_qkv": (h, q + 2 * kv), "attn_q": (h, q), "attn_k": (h, kv), "attn_v": (h, kv), "attn_dense": (q, h),
            "mlp_h_to_4h": (h, inter), "mlp_gate": (h, inter), "mlp_4h_to_h": (inter, h), "mlp_gate_up": (h, 2 * inter)}


def load_engine_spec(engine_dir: Path) -> EngineLoraSpec:
    """Read config.json of a TensorRT-LLM engine folder (or the CPU engine's)."""
    path = Path(engine_dir) / "config.json"
    if not path.is_file():
        raise LoraConvertError(f"Engine folder {engine_dir} has no config.json.")
    try:
        config = json.loads(path.read_text())
        pretrained, build = config["pretrained_config"], config["build_config"]
        lora = build.get("lora_config") or {}
        hidden, heads = int(pretrained["hidden_size"]), int(pretrained["num_attention_heads"])
        return EngineLoraSpec(
            path=path,
            dtype=str(pretrained.get("dtype", "float16")),
            max_rank=int(lora.get("max_lora_rank") or 0),
            target_modules=tuple(lora.get("lora_target_modules") or ()),
            num_layers=int(pretrained["num_hidden_layers"]),
            hidden_size=hidden,
            intermediate_size=int(pretrained["intermediate_size"]),
            num_heads=heads,
            num_kv_heads=int(pretrained.get("num_key_value_heads") or heads),
            head_size=int(pretrained.get("head_size") or hidden // heads),
        )
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LoraConvertError(f"{path} is not valid JSON: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise LoraConvertError(f"{path} is not an engine config (missing or bad field {exc}).") from None


def check_against_engine(converted: ConvertedLora, spec: EngineLoraSpec, dropping: bool = False) -> None:
    """Raise LoraConvertError with the first way the adapter does not fit the engine. `dropping`: modules the engine
    was not built for are left out when the adapter is sent (the audit names them dropped), so only an adapter none
    of whose modules the engine applies is refused for them."""
    if not spec.target_modules or spec.max_rank <= 0:
        raise LoraConvertError(f"The engine ({spec.path}) was built without LoRA support "
                               "(build_config.lora_config has no lora_target_modules / max_lora_rank).")
    if converted.dtype != spec.dtype:
        raise LoraConvertError(f"The adapter is stored as {converted.dtype} but the engine's dtype is {spec.dtype}; "
                               f"the backend needs LoRA weights in the engine dtype (convert with --dtype {spec.dtype}).")
    if converted.rank > spec.max_rank:
        raise LoraConvertError(f"The adapter's rank {converted.rank} is above the engine's max_lora_rank "
                               f"{spec.max_rank}; rebuild the engine with --max_lora_rank {converted.rank} or more.")
    missing = [m for m in converted.trt_modules if m not in spec.target_modules]
    if missing and not (dropping and len(missing) < len(set(converted.trt_modules))):
        names = ", ".join(f"{TRT_TO_HF.get(m, m)} ({m})" for m in missing)
        raise LoraConvertError(f"The adapter targets {names}, which the engine was not built for; its "
                               f"lora_target_modules are {', '.join(spec.target_modules)}.")
    top = max(converted.layers)
    if top >= spec.num_layers:
        raise LoraConvertError(f"The adapter has weights for layer {top} but the engine's model has "
                               f"{spec.num_layers} layers; it was made for another base model.")
    for row in converted.rows:
        expected = spec.module_shape(row.trt_module)
        if expected is None:
            continue
        if row.module == "gate_up_proj":
            expected = (expected[0], 2 * expected[1])
        if (row.in_size, row.out_size) != expected:
            raise LoraConvertError(
                f"Layer {row.layer} {row.module} maps {row.in_size} -> {row.out_size} features but the engine's "
                f"{row.trt_module} maps {expected[0]} -> {expected[1]}; the adapter was made for another base model."
            )
    if not converted.rows:  # an npy pair: check each row's length against the engine's module sizes
        for module_id, layer, rank in converted.config[0].tolist():
            shape = spec.module_shape(TRT_MODULE_NAMES[module_id])
            if shape and rank * (shape[0] + shape[1]) > converted.weights.shape[2]:
                raise LoraConvertError(
                    f"Row for layer {layer} {TRT_MODULE_NAMES[module_id]} (rank {rank}) needs "
                    f"{rank * (shape[0] + shape[1])} values but rows hold {converted.weights.shape[2]}; "
                    "the adapter was made for another base model."
                )


def convert_folder(peft_dir: Path, out_dir: Path, dtype: str | None = None,
                   engine_dir: Path | None = None) -> ConvertedLora:
    """The CLI's job: convert, check against the engine when given, write atomically."""
    spec = load_engine_spec(engine_dir) if engine_dir else None
    converted = convert_peft(peft_dir, dtype or (spec.dtype if spec else "float16"))
    if spec is not None:
        check_against_engine(converted, spec)
    save_converted(converted, out_dir)
    return converted


