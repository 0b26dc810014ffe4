"""LoRA for the CPU engine, following the TensorRT-LLM backend's contract.

- `decode_adapter` reads a request's `lora_weights` [1, rows, row_len] and `lora_config` [1, rows, 3]
  ([module_id, layer, rank]; row = flatten(A[rank, in]) then flatten(B[out, rank]), B pre-scaled)
  and checks them in the executor's order with its error texts.
- `LoraCache` is the host cache keyed by task id: its size is the bytes of weights it holds (the
  request tensors' size), and it evicts the least recently used task that no request is using.
- The batched forward pass (forward.py) adds x @ A^T @ B^T of each adapter to its own rows;
  `LoraHooks` does the same on a plain Hugging Face model for one adapter at a time (tools, tests).

Partial LoRA (InternLM-XComposer2's Plora; TensorRT-LLM's `has_partial_lora_mask`): a partial adapter's
update is applied only at token positions whose input id is a fake prompt-table id (id >= vocab_size,
an image row) and is exactly zero elsewhere, at every LoRA module. The switch is per adapter
(`LoraAdapter.partial`) and set for every adapter of an engine, as TensorRT-LLM sets the mask for the
whole model: by `pretrained_config.has_partial_lora_mask` in the engine's config.json (where a converted
checkpoint records it), or by the tensorrt_llm model's parameter `has_partial_lora_mask` ("true" /
"false"; CPU engine only, it overrides the config.json so a repository can share an engine folder).
Such a model needs its adapter on every request (the request's lora_task_id); the engine does not add it.

This module has no Triton import so tests can use it directly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from cpu_runtime.engine.messages import (
    MSG_ADAPTER_SIZE,
    MSG_BATCH,
    MSG_BOTH_TENSORS,
    MSG_CACHE_FULL,
    MSG_DTYPE,
    MSG_KEYS_DTYPE,
    MSG_KEYS_SHAPE,
    MSG_KEYS_WIDTH,
    MSG_LAYER,
    MSG_MODULE,
    MSG_NOT_CACHED,
    MSG_RANK,
    MSG_ROWS,
    MSG_STORE,
    MSG_TASK_ID_REQUIRED,
    MSG_TOO_FEW,
    MSG_WEIGHTS_SHAPE,
)

# module id -> (TensorRT-LLM module name, attribute path inside a decoder layer of a Llama-style model)
MODULES = {
    1: ("attn_q", "self_attn.q_proj"), 2: ("attn_k", "self_attn.k_proj"), 3: ("attn_v", "self_attn.v_proj"),
    4: ("attn_dense", "self_attn.o_proj"), 5: ("mlp_h_to_4h", "mlp.gate_proj"),
    6: ("mlp_4h_to_h", "mlp.down_proj"), 7: ("mlp_gate", "mlp.up_proj"),
}
OTHER_MODULE_NAMES = {
    0: "attn_qkv", 8: "cross_attn_qkv", 9: "cross_attn_q", 10: "cross_attn_k", 11: "cross_attn_v",
    12: "cross_attn_dense", 13: "moe_h_to_4h", 14: "moe_4h_to_h", 15: "moe_gate", 16: "moe_router",
    17: "mlp_router", 18: "mlp_gate_up",
}
CONFIG_ROW = 3
DEFAULT_HOST_CACHE_BYTES = 1 << 30  # the backend's default lora_cache_host_memory_bytes
ENGINE_NUMPY_DTYPES = {"float16": np.float16, "float32": np.float32}



class LoraError(ValueError):
    """A LoRA request the backend would refuse; the text goes back to the client."""


def module_name(module_id: int) -> str:
    if module_id in MODULES:
        return MODULES[module_id][0]
    return OTHER_MODULE_NAMES.get(module_id, str(module_id))


@dataclass(frozen=True)
class EngineLora:
    """The engine's LoRA limits (build_config.lora_config) and its Linear layers' (in, out) sizes."""

    dtype: str
    max_rank: int
    target_modules: tuple[str, ...]
    num_layers: int
    shapes: dict  # module id -> (in, out)
    partial_mask: bool = False  # has_partial_lora_mask: every adapter of this engine is partial

    @classmethod
    def from_engine(cls, engine_config: dict, model: torch.nn.Module) -> EngineLora:
        lora = engine_config.get("build_config", {}).get("lora_config") or {}
        pretrained = engine_config.get("pretrained_config", {})
        layers = _decoder_layers(model)
        shapes = {}
        for module_id, (_, path) in MODULES.items():
            linear = _resolve(layers[0], path)
            if linear is not None:
                shapes[module_id] = (linear.in_features, linear.out_features)
        return cls(
            dtype=str(pretrained.get("dtype", "float16")),
            max_rank=int(lora.get("max_lora_rank") or 0),
            target_modules=tuple(lora.get("lora_target_modules") or ()),
            num_layers=len(layers),
            shapes=shapes,
            partial_mask=_flag(pretrained.get("has_partial_lora_mask", False)),
        )


@dataclass
class LoraAdapter:
    """A decoded adapter: (layer, module id) -> (A [rank, in], B [out, rank]) float32 tensors.

    `partial`: the update applies only at rows whose input id is a fake prompt-table id (Partial LoRA).
    """

    task_id: int
    weights: dict
    nbytes: int
    partial: bool = False
    fused: dict = field(default_factory=dict)  # per layer, the forward pass's stacked A/B (forward.py)


def _decoder_layers(model: torch.nn.Module):
    inner = getattr(model, "model", model)
    return inner.layers


def _resolve(root: torch.nn.Module, path: str):
    for part in path.split("."):
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def decode_adapter(task_id: int, weights: np.ndarray, config: np.ndarray, engine: EngineLora) -> LoraAdapter:
    """Check a request's LoRA tensors as the executor does and split every row into A and B."""
    if weights is None or config is None:
        raise LoraError(MSG_BOTH_TENSORS)
    if weights.ndim != 3:
        raise LoraError(MSG_WEIGHTS_SHAPE)
    if config.ndim != 3:
        raise LoraError(MSG_KEYS_SHAPE)
    if weights.shape[0] != 1 or config.shape[0] != 1:
        raise LoraError(MSG_BATCH)
    if config.dtype != np.int32:
        raise LoraError(MSG_KEYS_DTYPE.format(dtype=str(config.dtype)))
    if config.shape[1] != weights.shape[1]:
        raise LoraError(MSG_ROWS)
    if config.shape[2] not in (CONFIG_ROW, CONFIG_ROW + 1):
        raise LoraError(MSG_KEYS_WIDTH)
    if weights.dtype != np.dtype(ENGINE_NUMPY_DTYPES.get(engine.dtype, np.float16)):
        raise LoraError(MSG_DTYPE)
    rows = {}
    for index, row in enumerate(config[0].tolist()):
        module_id, layer, rank = row[0], row[1], row[2]
        if not 0 <= layer < engine.num_layers:
            raise LoraError(MSG_LAYER)
        if rank <= 0:
            raise LoraError(MSG_ADAPTER_SIZE)
        name = module_name(module_id)
        if name not in engine.target_modules or module_id not in engine.shapes:
            raise LoraError(MSG_MODULE.format(module=name))
        in_size, out_size = engine.shapes[module_id]
        if rank * (in_size + out_size) > weights.shape[2]:
            raise LoraError(MSG_TOO_FEW.format(module=name))
        if rank > engine.max_rank:
            raise LoraError(MSG_RANK.format(rank=rank, max_rank=engine.max_rank))
        # numpy copies: no PyTorch parallel region in this (request) thread, see model.py's engine thread
        values = np.asarray(weights[0, index], dtype=np.float32)
        a = values[: rank * in_size].reshape(rank, in_size).copy()
        b = values[rank * in_size: rank * (in_size + out_size)].reshape(out_size, rank).copy()
        rows[(layer, module_id)] = (torch.from_numpy(a), torch.from_numpy(b))
    return LoraAdapter(task_id=int(task_id), weights=rows, nbytes=int(weights.nbytes), partial=engine.partial_mask)


class LoraCache:
    """Host LoRA cache keyed by task id; LRU eviction of tasks no request is using, by bytes and, with
    `max_entries` (the LLM API's max_cpu_loras), by count."""

    def __init__(self, capacity_bytes: int, max_entries: int | None = None):
        self.capacity = int(capacity_bytes)
        self.max_entries = max_entries
        self._entries: OrderedDict[int, LoraAdapter] = OrderedDict()
        self._in_use: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def used_bytes(self) -> int:
        return sum(a.nbytes for a in self._entries.values())

    def task_ids(self) -> list[int]:
        with self._lock:
            return list(self._entries)

    def has(self, task_id: int) -> bool:
        with self._lock:
            return task_id in self._entries

    def _make_room(self, adapter: LoraAdapter) -> None:
        needed = self.used_bytes + adapter.nbytes - self.capacity
        extra = len(self._entries) + 1 - self.max_entries if self.max_entries else 0
        for task_id in list(self._entries):
            if needed <= 0 and extra <= 0:
                break
            if self._in_use.get(task_id, 0) == 0:
                needed -= self._entries.pop(task_id).nbytes
                extra -= 1
        if needed > 0 or extra > 0:
            raise LoraError(MSG_STORE.format(task_id=adapter.task_id, reason=MSG_CACHE_FULL))

    def put(self, adapter: LoraAdapter, acquire: bool = False) -> LoraAdapter:
        """Store an adapter (replacing a task that is not in use); optionally mark it in use."""
        with self._lock:
            current = self._entries.get(adapter.task_id)
            if current is not None and self._in_use.get(adapter.task_id, 0):
                adapter = current  # a running request uses this task: keep what it runs with
            else:
                self._entries.pop(adapter.task_id, None)
                self._make_room(adapter)
                self._entries[adapter.task_id] = adapter
            self._entries.move_to_end(adapter.task_id)
            if acquire:
                self._in_use[adapter.task_id] = self._in_use.get(adapter.task_id, 0) + 1
            return adapter

    def acquire(self, task_id: int) -> LoraAdapter:
        """The cached adapter for a task id alone, marked in use; the backend's error when absent."""
        with self._lock:
            adapter = self._entries.get(task_id)
            if adapter is None:
                raise LoraError(MSG_NOT_CACHED.format(task_id=task_id))
            self._entries.move_to_end(task_id)
            self._in_use[task_id] = self._in_use.get(task_id, 0) + 1
            return adapter

    def release(self, adapter: LoraAdapter) -> None:
        with self._lock:
            left = self._in_use.get(adapter.task_id, 0) - 1
            if left > 0:
                self._in_use[adapter.task_id] = left
            else:
                self._in_use.pop(adapter.task_id, None)


class LoraHooks:
    """Forward hooks on every LoRA-capable Linear; they add the active adapter's update, if any.

    A partial adapter needs the input ids of the forward call (`use(adapter, input_ids)`, or set
    `input_ids` between calls): its update goes to the positions whose id is >= vocab_size only, and
    nowhere when no ids are given (ids a Hugging Face model can embed are never fake ones).
    """

    def __init__(self, model: torch.nn.Module):
        self.active: LoraAdapter | None = None
        self.input_ids: torch.Tensor | None = None
        self.vocab_size = model.get_input_embeddings().weight.shape[0]
        self._handles = []
        for layer_index, layer in enumerate(_decoder_layers(model)):
            for module_id, (_, path) in MODULES.items():
                linear = _resolve(layer, path)
                if linear is not None:
                    self._handles.append(linear.register_forward_hook(self._hook(layer_index, module_id)))

    def _hook(self, layer: int, module_id: int):
        key = (layer, module_id)

        def add_update(_module, args, output):
            adapter = self.active
            if adapter is None:
                return None
            ab = adapter.weights.get(key)
            if ab is None:
                return None
            a, b = ab
            x = args[0]
            update = x.to(a.dtype) @ a.T @ b.T
            if adapter.partial:
                if self.input_ids is None:
                    return None
                mask = self.input_ids >= self.vocab_size
                if tuple(mask.shape) != tuple(x.shape[:-1]):
                    raise ValueError(f"input_ids {tuple(mask.shape)} do not match the tokens {tuple(x.shape[:-1])}")
                update = torch.where(mask.unsqueeze(-1), update, torch.zeros((), dtype=update.dtype))
            return output + update.to(output.dtype)

        return add_update

    @contextmanager
    def use(self, adapter: LoraAdapter | None, input_ids: torch.Tensor | None = None):
        """Run the model with `adapter` (None: the base model); `input_ids` place a partial adapter."""
        previous = self.active, self.input_ids
        self.active, self.input_ids = adapter, input_ids
        try:
            yield
        finally:
            self.active, self.input_ids = previous

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class LoraManager:
    """What the runner needs: validate + cache + prefetch, configured from the model parameters."""

    def __init__(self, model: torch.nn.Module, engine_config: dict, params: dict, log=print):
        self.engine = EngineLora.from_engine(engine_config, model)
        if params.get("has_partial_lora_mask", "") != "":
            self.engine = replace(self.engine, partial_mask=_flag(params["has_partial_lora_mask"]))
        capacity = _int_param(params, "lora_cache_host_memory_bytes", DEFAULT_HOST_CACHE_BYTES)
        self.cache = LoraCache(capacity)
        self.log = log
        prefetch = params.get("lora_prefetch_dir", "")
        if prefetch:
            self.prefetch(Path(prefetch))

    def acquire(self, task_id: int | None, weights: np.ndarray | None, config: np.ndarray | None):
        """The adapter a request runs with (marked in use), or None for a request without LoRA."""
        if task_id is None and weights is None and config is None:
            return None
        if task_id is None:
            raise LoraError(MSG_TASK_ID_REQUIRED)
        if weights is None and config is None:
            return self.cache.acquire(task_id)
        adapter = decode_adapter(task_id, weights, config, self.engine)
        return self.cache.put(adapter, acquire=True)

    def release(self, adapter: LoraAdapter | None) -> None:
        if adapter is not None:
            self.cache.release(adapter)

    def prefetch(self, folder: Path) -> list[int]:
        """Load <folder>/<digits>/model.lora_{weights,config}.npy into the cache; return the task ids."""
        if not folder.is_dir():
            return []
        loaded = []
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if not entry.is_dir():
                continue
            if not entry.name.isdigit():
                self.log(f"lora_prefetch_dir: skipping '{entry.name}' (folder names must be task ids, digits only)")
                continue
            try:
                weights = np.load(entry / "model.lora_weights.npy", allow_pickle=False)
                config = np.load(entry / "model.lora_config.npy", allow_pickle=False)
                adapter = decode_adapter(int(entry.name), weights, config.astype(np.int32), self.engine)
                self.cache.put(adapter)
                loaded.append(adapter.task_id)
            except (OSError, ValueError) as exc:
                self.log(f"lora_prefetch_dir: skipping task {entry.name}: {exc}")
        if loaded:
            self.log(f"lora_prefetch_dir: loaded LoRA tasks {loaded} from {folder}")
        return loaded


def _int_param(params: dict, key: str, default: int) -> int:
    try:
        return int(float(params.get(key, default)))
    except (TypeError, ValueError):
        return default


def _flag(value) -> bool:
    """A config or parameter boolean: true/1/yes (any case) or a JSON true."""
    return value is True or str(value).strip().lower() in ("true", "1", "yes")
