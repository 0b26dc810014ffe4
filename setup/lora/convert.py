"""Convert a Hugging Face PEFT LoRA adapter into the TensorRT-LLM backend's LoRA tensors.

Input: a PEFT folder (`adapter_config.json` plus `adapter_model.safetensors`, or `adapter_model.bin`
read with `torch.load(weights_only=True)`, which never unpickles arbitrary objects).
Output (what the backend's `lora_weights` / `lora_config` inputs take, see the backend spec §5):

- `model.lora_weights.npy` [1, rows, max_row]: one row per (layer, module) holding flatten(A[r, in])
  then flatten(B[out, r]), B scaled by alpha/r (alpha/sqrt(r) with rsLoRA), zero-padded to the
  longest row.
- `model.lora_config.npy` [1, rows, 3] int32: `[module_id, layer, rank]`, the width every recorded
  release's backend declares for `lora_config` (setup/data/trtllm_versions.yaml `lora_config_columns`).
  Later upstream `hf_lora_convert.py` writes a fourth column, `is_dora`; such files are read too (the
  column dropped when it is 0; DoRA rows refused, see below).

Storage dtypes: float16 (default; Triton's `lora_weights` input is TYPE_FP16), float32, and bfloat16.
NumPy has no bfloat16; as upstream (tensorrt_llm `np_bfloat16`), bfloat16 weights are stored as raw
2-byte values (`V2`, round-to-nearest-even from float32); uint16 bit patterns, which earlier versions
of this tool wrote, are read as well. Such a file fits only a bf16 engine whose config was edited to
take bf16 LoRA weights.

MoE adapters (Mixtral-style `block_sparse_moe.w1/w2/w3/gate`) map to the backend's moe modules as in
later `hf_lora_convert.py`; per-expert weights (`experts.<k>.`) have no row of their own in lora_config
and are refused. DoRA adapters are refused: their magnitude vectors must first be normalised against
the base model's weights, which a PEFT folder does not hold.

`check_against_engine` compares an adapter with an engine's config.json (GPU engine or CPU engine):
rank, target modules, dtype, number of layers and every module's in/out sizes.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from setup.catalog.checkpoint import lora_module_map
from setup.lora.module_paths import is_tower_key

WEIGHTS_FILE = "model.lora_weights.npy"
CONFIG_FILE = "model.lora_config.npy"
PEFT_CONFIG = "adapter_config.json"
PEFT_SAFETENSORS = "adapter_model.safetensors"
PEFT_BIN = "adapter_model.bin"

# TensorRT-LLM LoRA module name -> id (tensorrt_llm LoraModule).
TRT_MODULE_IDS = {
    "attn_qkv": 0, "attn_q": 1, "attn_k": 2, "attn_v": 3, "attn_dense": 4,
    "mlp_h_to_4h": 5, "mlp_4h_to_h": 6, "mlp_gate": 7,
    "cross_attn_qkv": 8, "cross_attn_q": 9, "cross_attn_k": 10, "cross_attn_v": 11, "cross_attn_dense": 12,
    "moe_h_to_4h": 13, "moe_4h_to_h": 14, "moe_gate": 15, "moe_router": 16, "mlp_router": 17, "mlp_gate_up": 18,
}
TRT_MODULE_NAMES = {v: k for k, v in TRT_MODULE_IDS.items()}
# Hugging Face module name -> TensorRT-LLM module (HF up_proj is TRT mlp_gate, gate_proj is mlp_h_to_4h).
HF_TO_TRT: dict[str, str] = lora_module_map()
# Canonical (Llama-style) HF name of each TRT module, for display of converted pairs.
TRT_TO_HF = {"attn_qkv": "qkv_proj", "attn_q": "q_proj", "attn_k": "k_proj", "attn_v": "v_proj",
             "attn_dense": "o_proj", "mlp_h_to_4h": "gate_proj", "mlp_4h_to_h": "down_proj", "mlp_gate": "up_proj",
             "moe_h_to_4h": "w1", "moe_4h_to_h": "w2", "moe_gate": "w3", "moe_router": "gate"}
BFLOAT16 = np.dtype("V2")  # upstream's numpy stand-in for bfloat16: 2 raw bytes per value
STORAGE_DTYPES = {"float16": np.float16, "float32": np.float32, "bfloat16": BFLOAT16}
NUMPY_TO_STORAGE = {np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
                    BFLOAT16: "bfloat16", np.dtype(np.uint16): "bfloat16"}
CONFIG_COLUMNS = 3  # [module_id, layer, rank]; upstream's 4-column files add is_dora
FILE_MODE = 0o644
KEY_PATTERN = re.compile(r"\.layers\.(\d+)\.(self_attn|mlp|block_sparse_moe)\.(\w+)\.lora_(A|B)\.weight$")
EXPERT_PATTERN = re.compile(r"\.layers\.(\d+)\.block_sparse_moe\.experts\.(\d+)\.")
DORA_PATTERN = re.compile(r"lora_magnitude_vector|weight_m_wdecomp")


class LoraConvertError(ValueError):
    """The adapter cannot be converted or does not fit the engine; the message says why."""


@dataclass(frozen=True)
class LoraRow:
    """One (layer, module) of an adapter: A [rank, in] and B [out, rank] (B already scaled), float32."""

    module: str  # HF module name
    layer: int
    a: np.ndarray
    b: np.ndarray

    @property
    def trt_module(self) -> str:
        return HF_TO_TRT[self.module]

    @property
    def module_id(self) -> int:
        return TRT_MODULE_IDS[self.trt_module]

    @property
    def rank(self) -> int:
        return int(self.a.shape[0])

    @property
    def in_size(self) -> int:
        return int(self.a.shape[1])

    @property
    def out_size(self) -> int:
        return int(self.b.shape[0])


@dataclass(frozen=True)
class ConvertedLora:
    """The backend's two tensors plus what was learned on the way."""

    weights: np.ndarray  # [1, rows, max_row], storage dtype
    config: np.ndarray  # [1, rows, 3] int32
    dtype: str
    rows: tuple[LoraRow, ...] = ()  # empty when loaded from an npy pair

    @property
    def rank(self) -> int:
        return int(self.config[0, :, 2].max()) if self.config.shape[1] else 0

    @property
    def trt_modules(self) -> tuple[str, ...]:
        ids = sorted({int(i) for i in self.config[0, :, 0]})
        return tuple(TRT_MODULE_NAMES.get(i, f"module_{i}") for i in ids)

    @property
    def hf_modules(self) -> tuple[str, ...]:
        if self.rows:
            return tuple(dict.fromkeys(sorted({r.module for r in self.rows}, key=_module_order)))
        return tuple(TRT_TO_HF.get(m, m) for m in self.trt_modules)

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(sorted({int(i) for i in self.config[0, :, 1]}))

    @property
    def nbytes(self) -> int:
        return int(self.weights.nbytes + self.config.nbytes)


def _module_order(name: str) -> int:
    return TRT_MODULE_IDS.get(HF_TO_TRT.get(name, ""), 99)


# ---- reading a PEFT folder ---------------------------------------------------------------------
def read_peft_config(folder: Path) -> dict:
    """adapter_config.json of a PEFT LoRA folder, checked for what conversion needs."""
    folder = Path(folder)
    if not folder.is_dir():
        raise LoraConvertError(f"PEFT folder {folder} does not exist.")
    path = folder / PEFT_CONFIG
    if not path.is_file():
        raise LoraConvertError(f"{folder} has no {PEFT_CONFIG}; it is not a PEFT adapter folder.")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LoraConvertError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise LoraConvertError(f"{path} must hold a JSON object.")
    kind = str(config.get("peft_type", "LORA")).upper()
    if kind != "LORA":
        raise LoraConvertError(f"{path} describes a {kind} adapter; only LORA adapters can be converted.")
    for key in ("r", "lora_alpha"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise LoraConvertError(f"{path}: '{key}' must be a positive number, got {value!r}.")
    if config.get("use_dora"):
        raise LoraConvertError(f"{path}: DoRA adapters (use_dora) cannot be converted: their magnitude vectors "
                               "must be normalised against the base model's weights first, and the backend's "
                               "lora_config of the recorded releases has no is_dora column.")
    if config.get("lora_bias"):
        raise LoraConvertError(f"{path}: adapters with a LoRA bias (lora_bias) cannot be expressed as A/B rows.")
    return config


def read_peft_weights(folder: Path) -> dict[str, np.ndarray]:
    """State dict of the adapter as float32 arrays (safetensors first, then a weights-only .bin)."""
    folder = Path(folder)
    safetensors_path, bin_path = folder / PEFT_SAFETENSORS, folder / PEFT_BIN
    if safetensors_path.is_file():
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            tensors = load_file(str(safetensors_path))
        except (SafetensorError, OSError, ValueError) as exc:
            raise LoraConvertError(f"{safetensors_path} could not be read: {exc}") from None
    elif bin_path.is_file():
        import pickle

        import torch

        try:
            tensors = torch.load(bin_path, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as exc:
            raise LoraConvertError(f"{bin_path} could not be loaded as plain tensors (weights_only): {exc}") from None
        if not isinstance(tensors, dict):
            raise LoraConvertError(f"{bin_path} does not hold a state dict.")
    else:
        raise LoraConvertError(f"{folder} has neither {PEFT_SAFETENSORS} nor {PEFT_BIN}.")
    import torch

    out = {}
    for key, value in tensors.items():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            out[key] = value.detach().to(torch.float32).cpu().numpy()
    return out


def _pattern_value(patterns: dict, module_path: str, default: float) -> float:
    """PEFT rank_pattern / alpha_pattern lookup: a key matches the end of the module path."""
    for key, value in (patterns or {}).items():
        if re.match(rf"(.*\.)?({key})$", module_path):
            return value
    return default


def peft_rows(folder: Path) -> list[LoraRow]:
    """LoRA rows of a PEFT folder's language model, B scaled as the backend expects, sorted by (layer, module id)."""
    config = read_peft_config(folder)
    tensors = read_peft_weights(folder)
    pairs: dict[tuple[int, str], dict[str, np.ndarray]] = {}
    paths: dict[tuple[int, str], str] = {}
    unknown = set()
    experts = sorted({key.split(".block_sparse_moe.")[0] for key in tensors if EXPERT_PATTERN.search(key)})
    if experts:
        raise LoraConvertError(f"{folder}: per-expert MoE LoRA weights (block_sparse_moe.experts.<k>.) have no row "
                               "of their own in the backend's lora_config [module, layer, rank]; only adapters "
                               "shared by all experts (block_sparse_moe.w1/w2/w3/gate) can be converted.")
    if any(DORA_PATTERN.search(key) for key in tensors):
        raise LoraConvertError(f"{folder}: the adapter holds DoRA magnitude vectors; DoRA adapters cannot be "
                               "converted (they must be normalised against the base model's weights first).")
    for key, value in tensors.items():
        match = KEY_PATTERN.search(key)
        if not match or is_tower_key(key[: match.start(4) - len(".lora_")]):
            continue  # a vision tower's layers are no rows of the language model (the audit names them dropped)
        layer, _, module, which = int(match.group(1)), match.group(2), match.group(3), match.group(4)
        if module not in HF_TO_TRT:
            unknown.add(module)
            continue
        pairs.setdefault((layer, module), {})[which] = value
        paths[(layer, module)] = key[: match.start(4) - len(".lora_")].removeprefix("base_model.model.")
    if unknown:
        raise LoraConvertError(
            f"Module(s) {', '.join(sorted(unknown))} have no TensorRT-LLM LoRA module id "
            f"(supported: {', '.join(HF_TO_TRT)})."
        )
    if not pairs:
        raise LoraConvertError(
            f"{folder}: no weights named like '.layers.<N>.(self_attn|mlp|block_sparse_moe).<module>.lora_A/B.weight' "
            "were found."
        )
    rows = []
    for (layer, module), ab in pairs.items():
        where = f"layer {layer} {module}"
        if set(ab) != {"A", "B"}:
            missing = "lora_B" if "A" in ab else "lora_A"
            raise LoraConvertError(f"{where} has no {missing} weight; the adapter file is incomplete.")
        a, b = ab["A"], ab["B"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise LoraConvertError(
                f"{where}: lora_A {list(a.shape)} and lora_B {list(b.shape)} do not form a [r, in] x [out, r] pair."
            )
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise LoraConvertError(f"{where} contains NaN or infinite values.")
        rank = a.shape[0]
        declared = _pattern_value(config.get("rank_pattern"), paths[(layer, module)], config["r"])
        if rank != declared:
            raise LoraConvertError(f"{where}: lora_A has rank {rank} but adapter_config.json says r={declared}.")
        alpha = _pattern_value(config.get("alpha_pattern"), paths[(layer, module)], config["lora_alpha"])
        scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
        b = b * np.float32(scale)
        if module == "gate_up_proj":  # the backend's fused gate/up order is the reverse of HF's
            half = b.shape[0] // 2
            b = np.concatenate([b[half:], b[:half]], axis=0)
        rows.append(LoraRow(module=module, layer=layer, a=np.ascontiguousarray(a), b=np.ascontiguousarray(b)))
    rows.sort(key=lambda r: (r.layer, r.module_id))
    return rows


# ---- building and storing the tensors --------------------------------------------------------------
def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> storage dtype; bfloat16 becomes 2-byte `V2` values, as upstream (round to nearest even)."""
    if dtype not in STORAGE_DTYPES:
        raise LoraConvertError(f"dtype must be one of {', '.join(STORAGE_DTYPES)}, got '{dtype}'.")
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
        return (rounded >> np.uint32(16)).astype("<u2").view(BFLOAT16)
    return values.astype(STORAGE_DTYPES[dtype])


def from_storage(values: np.ndarray) -> np.ndarray:
    """Storage array -> float32 (`V2` and uint16 arrays are read as bfloat16 bit patterns)."""
    if values.dtype in (BFLOAT16, np.dtype(np.uint16)):
        return (values.view("<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
    return values.astype(np.float32)


def build_tensors(rows: list[LoraRow], dtype: str = "float16", columns: int = CONFIG_COLUMNS) -> ConvertedLora:
    """Pack rows into [1, rows, max_row] weights and [1, rows, columns] config (4: is_dora, always 0 here)."""
    if columns not in (3, 4):
        raise LoraConvertError(f"lora_config has 3 or 4 columns, not {columns}.")
    flat = [np.concatenate([r.a.reshape(-1), r.b.reshape(-1)]) for r in rows]
    width = max(len(f) for f in flat)
    weights = np.zeros((1, len(rows), width), dtype=np.float32)
    for i, values in enumerate(flat):
        weights[0, i, : len(values)] = values
    config = np.array([[[r.module_id, r.layer, r.rank, 0][:columns] for r in rows]], dtype=np.int32)
    return ConvertedLora(weights=to_storage(weights, dtype), config=config, dtype=dtype, rows=tuple(rows))


def convert_peft(folder: Path, dtype: str = "float16", columns: int = CONFIG_COLUMNS) -> ConvertedLora:
    """PEFT folder -> the backend's tensors (in memory), lora_config `columns` wide (the release's width)."""
    if dtype not in STORAGE_DTYPES:
        raise LoraConvertError(f"dtype must be one of {', '.join(STORAGE_DTYPES)}, got '{dtype}'.")
    return build_tensors(peft_rows(Path(folder)), dtype, columns)


def _atomic_save(path: Path, array: np.ndarray) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)  # mkstemp makes 0600; the server may run as another user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_converted(converted: ConvertedLora, out_dir: Path) -> tuple[Path, Path]:
    """Write both npy files into out_dir, each through a temporary file and an atomic rename."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    weights, config = out_dir / WEIGHTS_FILE, out_dir / CONFIG_FILE
    _atomic_save(weights, converted.weights)
    _atomic_save(config, converted.config)
    return weights, config


def load_converted(folder: Path) -> ConvertedLora:
    """Read and shape-check an already converted pair."""
    folder = Path(folder)
    arrays = {}
    for name in (WEIGHTS_FILE, CONFIG_FILE):
        path = folder / name
        if not path.is_file():
            raise LoraConvertError(f"{folder} has no {name}.")
        try:
            arrays[name] = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise LoraConvertError(f"{path} is not a readable .npy array: {exc}") from None
    weights, config = arrays[WEIGHTS_FILE], arrays[CONFIG_FILE]
    if weights.dtype not in NUMPY_TO_STORAGE:
        raise LoraConvertError(f"{folder / WEIGHTS_FILE} has dtype {weights.dtype}; expected float16, float32 "
                               "or bfloat16 (2-byte V2 as upstream writes it, or uint16 bits).")
    if weights.ndim == 2:
        weights = weights[None]
    if config.ndim == 2:
        config = config[None]
    if weights.ndim != 3 or weights.shape[0] != 1:
        raise LoraConvertError(f"{folder / WEIGHTS_FILE} must be shaped [1, rows, row_len], got {list(weights.shape)}.")
    if config.ndim != 3 or config.shape[0] != 1 or config.shape[2] not in (3, 4) or config.dtype.kind not in "iu":
        raise LoraConvertError(f"{folder / CONFIG_FILE} must be int32 shaped [1, rows, 3] ([module, layer, rank]) "
                               f"or [1, rows, 4] (with is_dora), got {list(config.shape)} {config.dtype}.")
    config = _three_columns(config, folder / CONFIG_FILE)
    if config.shape[1] != weights.shape[1] or config.shape[1] == 0:
        raise LoraConvertError(f"{folder}: weights have {weights.shape[1]} rows, config has {config.shape[1]}; "
                               "they must be equal and non-zero.")
    config = config.astype(np.int32)
    if (config[0, :, 2] <= 0).any() or (config[0, :, 1] < 0).any():
        raise LoraConvertError(f"{folder / CONFIG_FILE}: ranks must be > 0 and layers >= 0.")
    unknown = sorted({int(i) for i in config[0, :, 0]} - set(TRT_MODULE_NAMES))
    if unknown:
        raise LoraConvertError(f"{folder / CONFIG_FILE}: unknown module id(s) {unknown}.")
    return ConvertedLora(weights=weights, config=config, dtype=NUMPY_TO_STORAGE[weights.dtype])


def _three_columns(config: np.ndarray, where: Path) -> np.ndarray:
    """The backend's [module, layer, rank] rows of a 3- or 4-column (is_dora) lora_config."""
    if config.shape[2] == CONFIG_COLUMNS:
        return config
    dora = config[0, :, 3]
    if ((dora != 0) & (dora != 1)).any():
        raise LoraConvertError(f"{where}: the fourth column (is_dora) must be 0 or 1.")
    if dora.any():
        raise LoraConvertError(f"{where} has DoRA rows (is_dora 1); the backend's lora_config of the recorded "
                               "releases takes [module, layer, rank] only, so DoRA adapters cannot be served.")
    return np.ascontiguousarray(config[:, :, :CONFIG_COLUMNS])


def describe(converted: ConvertedLora) -> str:
    w, c = converted.weights, converted.config
    return (f"weights {list(w.shape)} {converted.dtype} ({w.nbytes / 1e6:.1f} MB), config {list(c.shape)} int32; "
            f"rank {converted.rank}, modules {', '.join(converted.hf_modules)}, {len(converted.layers)} layers")
