"""The KV-cache budget of the CPU engine, counted in blocks as the TensorRT-LLM backend counts them.

- The budget is `max_tokens_in_paged_kv_cache`, or `kv_cache_free_gpu_mem_fraction` of the host's
  available memory (the CPU's stand-in for free GPU memory); at least one full sequence, at most what
  the slot cache can hold (max_batch_size x max_seq_len).
- `guaranteed_no_evict` admits a request only when the blocks for its whole length (prompt + output
  budget) are left; `max_utilization` admits when its current tokens fit and pauses the latest
  request when a step runs out of blocks (it resumes later by recomputing its tokens).
- With `enable_kv_cache_reuse`, full blocks of finished requests stay in the pool, keyed by adapter
  and every token up to the block's end, until their room is needed; a new request with the same
  prefix starts from them (its K/V is copied into the request's slot; the block counts once).

This module has no Triton import so tests can use it directly.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

TOKENS_PER_BLOCK = 64
POLICIES = ("guaranteed_no_evict", "max_utilization")


@dataclass
class KvConfig:
    total_blocks: int
    tokens_per_block: int = TOKENS_PER_BLOCK
    policy: str = "guaranteed_no_evict"
    reuse: bool = False


@dataclass
class KvState:
    """What one request holds: its own blocks, shared (reused) blocks and its reservation."""

    own: int = 0
    reserved: int = 0
    shared: list = field(default_factory=list)  # keys of reused blocks (pinned while the request runs)
    new_total: int = 0  # blocks allocated for it over its life (perf output kv_cache_alloc_new_blocks)
    reused_total: int = 0


def _flag(params: dict, key: str, default: bool) -> bool:
    text = str(params.get(key, "")).strip().lower()
    return default if not text else text in ("true", "1", "yes")


def _available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def kv_config(params: dict, max_batch: int, max_seq_len: int, bytes_per_token: int, log=print) -> KvConfig:
    """The budget and policy from the model's parameters (the backend's names and defaults)."""
    policy = str(params.get("batch_scheduler_policy") or POLICIES[0]).strip()
    if policy not in POLICIES:
        log(f"batch_scheduler_policy '{policy}' is not {' or '.join(POLICIES)}; using {POLICIES[0]}")
        policy = POLICIES[0]
    tokens = params.get("max_tokens_in_paged_kv_cache")
    if tokens:
        budget = int(float(tokens))
    else:
        fraction = float(params.get("kv_cache_free_gpu_mem_fraction") or 0.9)
        budget = int(_available_bytes() * fraction) // max(1, bytes_per_token)
    low, high = max_seq_len, max_batch * max_seq_len
    if budget < low:
        log(f"KV cache: {budget} tokens cannot hold one sequence of max_seq_len {max_seq_len}; using {low}")
    budget = min(max(budget, low), high)
    blocks = -(-budget // TOKENS_PER_BLOCK)
    return KvConfig(total_blocks=blocks, policy=policy, reuse=_flag(params, "enable_kv_cache_reuse", False))


class KvManager:
    """Block accounting, admission and pause decisions, and the reusable-prefix store."""

    def __init__(self, config: KvConfig):
        self.config = config
        self.tpb = config.tokens_per_block
        self.used = 0  # own blocks of running requests
        self.store: OrderedDict = OrderedDict()  # key -> [kv blocks per layer, pins]
        self.reused_hits = 0

    # ---- figures -----------------------------------------------------------------------------
    def blocks(self, tokens: int) -> int:
        return -(-tokens // self.tpb)

    @property
    def pinned(self) -> int:
        return sum(1 for entry in self.store.values() if entry[1] > 0)

    def stats(self) -> dict:
        used = self.used + self.pinned
        total = self.config.total_blocks
        return {"max": total, "used": used, "free": total - used, "tokens_per": self.tpb,
                "fraction": used / total if total else 0.0, "reusable": len(self.store) - self.pinned}

    # ---- admission ---------------------------------------------------------------------------
    def _reserved(self, running) -> int:
        return sum(g.kv.reserved for g in running if g.kv is not None)

    def can_admit(self, gen, running, reused: int) -> bool:
        """Whether `gen` may start now, `reused` of its blocks coming from the store."""
        total = self.config.total_blocks
        if self.config.policy == "guaranteed_no_evict":
            need = self.blocks(len(gen.input_ids) + gen.max_new_tokens) - reused
            return self._reserved(running) + self.pinned + need <= total
        need = self.blocks(len(gen.input_ids) + len(gen.output_ids) + 1) - reused
        return self.used + self.pinned + need <= total

    def admit(self, gen, keys: list) -> None:
        """Start accounting for `gen`, pinning the reused blocks `keys`."""
        for key in keys:
            self.store[key][1] += 1
            self.store.move_to_end(key)
        total = self.blocks(len(gen.input_ids) + gen.max_new_tokens)
        gen.kv = KvState(reserved=total - len(keys), shared=list(keys), reused_total=len(keys))
        self.reused_hits += len(keys)

    def grow(self, gen, tokens: int) -> bool:
        """Own enough blocks for `tokens` positions; False when the pool has none left."""
        need = self.blocks(tokens) - len(gen.kv.shared) - gen.kv.own
        if need <= 0:
            return True
        if not self._make_room(need):
            return False
        self.used += need
        gen.kv.own += need
        gen.kv.new_total += need
        return True

    def _make_room(self, need: int) -> bool:
        free = self.config.total_blocks - self.used - len(self.store)
        for key in list(self.store):
            if free >= need:
                break
            if self.store[key][1] == 0:
                del self.store[key]
                free += 1
        return free >= need

    def release(self, gen) -> None:
        if gen.kv is None:
            return
        for key in gen.kv.shared:
            if key in self.store:
                self.store[key][1] -= 1
        self.used -= gen.kv.own
        gen.kv = None

    # ---- prefix reuse ------------------------------------------------------------------------
    def _keys(self, gen, tokens: list) -> list:
        if not self.config.reuse or gen.prompt_table is not None:
            return []
        task = getattr(gen.lora_adapter, "task_id", None)
        return [(task, tuple(tokens[: (j + 1) * self.tpb])) for j in range(len(tokens) // self.tpb)]

    def lookup(self, gen) -> list:
        """Keys of stored blocks that start `gen`'s tokens (leaving at least one token to compute)."""
        sequence = gen.input_ids + gen.output_ids
        found = []
        for key in self._keys(gen, sequence[:-1]):
            if key not in self.store:
                break
            found.append(key)
        return found

    def block_data(self, key):
        return self.store[key][0]

    def keep(self, gen, cached: int, read) -> None:
        """When `gen` finishes: turn its full cached blocks into reusable ones (`read(start, end)` gives
        the K/V of those positions). Call before release()."""
        if gen.kv is None:
            return
        keys = self._keys(gen, (gen.input_ids + gen.output_ids)[:cached])
        for index, key in enumerate(keys):
            if key in self.store or index < len(gen.kv.shared):
                continue
            if gen.kv.own == 0:
                break
            self.store[key] = [read(index * self.tpb, (index + 1) * self.tpb), 0]
            gen.kv.own -= 1
            self.used -= 1
