"""What an adapter folder holds, read without running anything in it: adapter_config.json, and the names,
shapes and dtypes of its weights (the safetensors header alone; a .bin through torch.load(weights_only=True),
which never unpickles objects; a converted pair's lora_config rows).

Each LoRA pair (lora_A, lora_B) is classified by where it sits in the model: the language model
(`...layers.<N>...<module>`), a tower beside it (`vision_model.*`, `visual.*`, `vision_tower.*`, a projector),
an embedding (`lora_embedding_A/B`), or elsewhere (e.g. `lm_head`). Weights that are no LoRA pair are whole
modules saved beside the adapter (PEFT's `modules_to_save`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from setup.lora.convert import (
    CONFIG_FILE,
    PEFT_BIN,
    PEFT_CONFIG,
    PEFT_SAFETENSORS,
    TRT_MODULE_NAMES,
    TRT_TO_HF,
    WEIGHTS_FILE,
    LoraConvertError,
    load_converted,
)
from setup.lora.messages import (
    MSG_AUDIT_HEADER,
    MSG_AUDIT_NO_FOLDER,
    MSG_AUDIT_NO_WEIGHTS,
    MSG_AUDIT_NOT_JSON,
)
from setup.lora.module_paths import EMBEDDING, LANGUAGE, classify

PAIR_PATTERN = re.compile(r"^(.*)\.lora_(A|B|embedding_A|embedding_B)(?:\.weight)?$")
DORA_KEY = re.compile(r"lora_magnitude_vector|weight_m_wdecomp")
SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                      "F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32"}
MAX_HEADER_BYTES = 100 * 2**20  # a LoRA header lists a few thousand tensors; anything larger is refused


@dataclass(frozen=True)
class LoraPart:
    """One LoRA pair: where it sits (`place`), its module or group name, and its shapes."""

    place: str  # LANGUAGE, TOWER, EMBEDDING or OTHER
    name: str  # HF module (q_proj) for the language model; the group (vision_model.*) elsewhere
    layer: int | None
    rank: int
    in_size: int
    out_size: int

    @property
    def params(self) -> int:
        return self.rank * (self.in_size + self.out_size)


@dataclass(frozen=True)
class SavedModule:
    """A whole module stored beside the adapter (modules_to_save): its name and parameter count."""

    name: str
    params: int


@dataclass(frozen=True)
class AdapterFacts:
    """What an adapter folder says about itself."""

    folder: Path
    kind: str  # "peft" or "converted"
    peft_type: str
    base_model: str  # base_model_name_or_path ("" when not recorded)
    use_dora: bool
    dtype: str  # the weights' stored dtype (several joined by '/')
    parts: tuple[LoraPart, ...]
    saved: tuple[SavedModule, ...] = ()
    dora_weights: bool = False  # DoRA magnitude vectors among the weights
    modules_to_save: tuple[str, ...] = ()  # as adapter_config.json lists them


def read_config(folder: Path) -> dict:
    path = folder / PEFT_CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LoraConvertError(MSG_AUDIT_NOT_JSON.format(path=path, reason=exc)) from None
    if not isinstance(config, dict):
        raise LoraConvertError(MSG_AUDIT_NOT_JSON.format(path=path, reason="not a JSON object"))
    return config


def safetensors_shapes(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) from a safetensors file's header; no tensor is read."""
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            if size <= 0 or size > min(MAX_HEADER_BYTES, path.stat().st_size - 8):
                raise ValueError(f"header size {size}")
            header = json.loads(handle.read(size))
    except (OSError, ValueError) as exc:
        raise LoraConvertError(MSG_AUDIT_HEADER.format(path=path, reason=exc)) from None
    return {key: (tuple(int(n) for n in value["shape"]), SAFETENSORS_DTYPES.get(value["dtype"], value["dtype"]))
            for key, value in header.items() if key != "__metadata__" and isinstance(value, dict)}


def bin_shapes(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of a .bin state dict loaded with weights_only=True (plain tensors only)."""
    import pickle

    import torch

    try:
        tensors = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as exc:
        raise LoraConvertError(MSG_AUDIT_HEADER.format(path=path, reason=exc)) from None
    if not isinstance(tensors, dict):
        raise LoraConvertError(MSG_AUDIT_HEADER.format(path=path, reason="no state dict"))
    return {key: (tuple(value.shape), str(value.dtype).removeprefix("torch."))
            for key, value in tensors.items() if isinstance(value, torch.Tensor)}


def _parts(shapes: dict[str, tuple[tuple[int, ...], str]]) -> tuple[list[LoraPart], list[SavedModule], bool]:
    pairs: dict[str, dict[str, tuple[int, ...]]] = {}
    saved, dora = [], False
    for key, (shape, _) in shapes.items():
        path = key.removeprefix("base_model.model.")
        if DORA_KEY.search(key):
            dora = True
            continue
        match = PAIR_PATTERN.match(path)
        if match:
            pairs.setdefault(match.group(1), {})[match.group(2)] = shape
        else:
            saved.append(SavedModule(name=path.removesuffix(".weight").removesuffix(".modules_to_save"),
                                     params=math.prod(shape)))
    parts = []
    for path, ab in sorted(pairs.items()):
        embedding = "embedding_A" in ab or "embedding_B" in ab
        a, b = (ab.get("embedding_A"), ab.get("embedding_B")) if embedding else (ab.get("A"), ab.get("B"))
        if a is None or b is None or len(a) != 2 or len(b) != 2:
            continue  # an incomplete pair: the conversion names it
        place, name, layer = classify(path)
        if embedding:
            place, name, rank, in_size, out_size = EMBEDDING, path.split(".")[-1], a[0], a[1], b[0]
        else:
            rank, in_size, out_size = a[0], a[1], b[0]
        parts.append(LoraPart(place=place, name=name, layer=layer, rank=rank, in_size=in_size, out_size=out_size))
    return parts, saved, dora


def _converted_facts(folder: Path, shapes: dict[str, tuple[int, int]]) -> AdapterFacts:
    """A converted pair: one language-model part per lora_config row; sizes from the served model when known,
    else the row's length split evenly (the pair records no in/out sizes)."""
    converted = load_converted(folder)
    row_len = int(converted.weights.shape[2])
    parts = []
    for module_id, layer, rank in converted.config[0].tolist():
        trt = TRT_MODULE_NAMES.get(module_id, str(module_id))
        in_size, out_size = shapes.get(trt) or (row_len // (2 * rank), row_len // (2 * rank))
        parts.append(LoraPart(place=LANGUAGE, name=TRT_TO_HF.get(trt, trt), layer=int(layer), rank=int(rank),
                              in_size=in_size, out_size=out_size))
    return AdapterFacts(folder=folder, kind="converted", peft_type="LORA", base_model="", use_dora=False,
                        dtype=converted.dtype, parts=tuple(parts))


def read_adapter(folder: Path, shapes: dict[str, tuple[int, int]] | None = None) -> AdapterFacts:
    """Read an adapter folder (PEFT or a converted pair); `shapes` (TRT module -> (in, out)) sizes a pair's rows."""
    folder = Path(folder)
    if not folder.is_dir():
        raise LoraConvertError(MSG_AUDIT_NO_FOLDER.format(folder=folder))
    if not (folder / PEFT_CONFIG).is_file() and (folder / WEIGHTS_FILE).is_file() and (folder / CONFIG_FILE).is_file():
        return _converted_facts(folder, shapes or {})
    config = read_config(folder)
    if (folder / PEFT_SAFETENSORS).is_file():
        weights = safetensors_shapes(folder / PEFT_SAFETENSORS)
    elif (folder / PEFT_BIN).is_file():
        weights = bin_shapes(folder / PEFT_BIN)
    else:
        raise LoraConvertError(MSG_AUDIT_NO_WEIGHTS.format(folder=folder))
    parts, saved, dora = _parts(weights)
    dtypes = sorted({dtype for _, dtype in weights.values()})
    return AdapterFacts(folder=folder, kind="peft", peft_type=str(config.get("peft_type") or "LORA").upper(),
                        base_model=str(config.get("base_model_name_or_path") or ""),
                        use_dora=bool(config.get("use_dora")), dtype="/".join(dtypes) or "unknown",
                        parts=tuple(parts), saved=tuple(saved), dora_weights=dora,
                        modules_to_save=tuple(str(m) for m in config.get("modules_to_save") or ()))
