"""One batched forward pass of a Llama-style model over ragged rows, with a slot KV cache.

All rows of a step are laid end to end ([tokens, hidden], no padding). Linear layers run once for
the whole step; each LoRA adapter's update is added to its own rows only, and a partial adapter's
(lora.py, Partial LoRA) only to those of its rows whose input id is a fake prompt-table id; attention
reads each row's keys from its cache slot: all single-token rows (decode) in one call, multi-token rows
(prefill chunks) one call each.

This module has no Triton import so tests can use it directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .lora import MODULES

# The fused projections of a layer and the LoRA module ids that feed each (module ids: lora.MODULES).
PROJECTIONS = {"qkv": (1, 2, 3), "o": (4,), "gate_up": (5, 7), "down": (6,)}
ONEDNN = torch.backends.mkldnn.is_available()


class Dense:
    """y = x W^T. Through oneDNN with the weight held in its own layout when PyTorch has it (a third
    faster than F.linear for the few rows of a decode step on the CPU), else F.linear."""

    def __init__(self, weight: torch.Tensor):
        self.packed = weight.to_mkldnn() if ONEDNN else None
        # one copy per process: with the packed one, the plain weight is not kept (a fused one would be a second)
        self.weight = weight if self.packed is None else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is None:
            return F.linear(x, self.weight)
        return torch._C._nn.mkldnn_linear(x.contiguous().to_mkldnn(), self.packed, None).to_dense()


@dataclass
class Segment:
    """One row's tokens in a step: `count` tokens at positions start.. in cache `slot`."""

    slot: int
    start: int
    ids: list
    adapter: object = None
    embeds: torch.Tensor | None = None  # [count, hidden] replaces the token embeddings (prompt table)
    logits: str = "last"  # "last", "all" or "none"
    owner: object = None  # the request this row belongs to

    @property
    def count(self) -> int:
        return len(self.ids)


class SlotCache:
    """K and V per layer as [slots, kv_heads, capacity, head_dim], both grown on demand: slots to the highest
    slot in use (in `slot_grain` steps, up to `max_slots`), capacity to the longest sequence (in `grain` steps,
    up to `max_len`). `release()` gives the memory back when the engine runs nothing, so what it holds follows
    the chats running now: one long chat costs one slot's length, not every slot's.

    Every method runs in inference mode: the store grows inside forward passes (so its tensors are
    inference tensors) and is also written between passes, when reused prefix blocks are restored.
    """

    def __init__(self, layers: int, slots: int, kv_heads: int, head_dim: int, max_len: int, grain: int = 256,
                 slot_grain: int = 8):
        self.max_slots, self.kv_heads, self.head_dim = slots, kv_heads, head_dim
        self.layers, self.max_len, self.grain, self.slot_grain = layers, max_len, grain, slot_grain
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []

    @property
    def capacity(self) -> int:
        return self.k[0].shape[2] if self.k else 0

    @property
    def slots(self) -> int:
        return self.k[0].shape[0] if self.k else 0

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)

    @torch.inference_mode()
    def reserve(self, length: int, slots: int = 1) -> None:
        """Make room for positions < length in slots < `slots` (copying what is there)."""
        if length <= self.capacity and slots <= self.slots:
            return
        if slots > self.max_slots:
            raise ValueError(f"slot {slots - 1} is past the cache's {self.max_slots} slots")
        cap = max(self.capacity, min(self.max_len, -(-max(length, 1) // self.grain) * self.grain))
        rows = max(self.slots, min(self.max_slots, -(-slots // self.slot_grain) * self.slot_grain))
        old_rows, old_cap = self.slots, self.capacity
        for store in (self.k, self.v):
            for i in range(self.layers):
                new = torch.zeros(rows, self.kv_heads, cap, self.head_dim)
                if i < len(store):
                    new[:old_rows, :, :old_cap] = store[i]
                    store[i] = new
                else:
                    store.append(new)

    def release(self) -> None:
        """Drop every slot's K/V (call only when no request holds a slot)."""
        self.k, self.v = [], []

    @torch.inference_mode()
    def read(self, slot: int, start: int, end: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """A copy of one slot's positions start..end-1, every layer."""
        return [(k[slot, :, start:end].clone(), v[slot, :, start:end].clone()) for k, v in zip(self.k, self.v, strict=True)]

    @torch.inference_mode()
    def write(self, slot: int, start: int, blocks: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        for (k, v), (bk, bv) in zip(zip(self.k, self.v, strict=True), blocks, strict=True):
            k[slot, :, start:start + bk.shape[1]] = bk
            v[slot, :, start:start + bv.shape[1]] = bv


def _fuse(linears) -> torch.Tensor:
    """The Linear weights concatenated by output rows (one matmul for several projections). The Linears keep their
    own weights (read from the safetensors file's mapping, shared by every process that loads it)."""
    return torch.cat([lin.weight.detach() for lin in linears], dim=0).contiguous()


class BatchedLlama:
    """The decoder's weights fused per layer (qkv, gate+up) and the batched forward pass."""

    def __init__(self, model: torch.nn.Module):
        inner = model.model
        cfg = model.config
        if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False) or cfg.hidden_act != "silu":
            raise RuntimeError("The CPU engine runs Llama-style decoders (no biases, SiLU MLP); "
                               f"{type(model).__name__} with this config is not one.")
        self.model = model
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.embed = inner.embed_tokens.weight
        self.lm_head = Dense(model.lm_head.weight.detach())
        self.norm = inner.norm
        self.rotary = inner.rotary_emb
        self.layers = []
        for layer in inner.layers:
            attn, mlp = layer.self_attn, layer.mlp
            self.layers.append({
                "in_norm": layer.input_layernorm, "post_norm": layer.post_attention_layernorm,
                "qkv": Dense(_fuse([attn.q_proj, attn.k_proj, attn.v_proj])), "o": Dense(attn.o_proj.weight.detach()),
                "gate_up": Dense(_fuse([mlp.gate_proj, mlp.up_proj])), "down": Dense(mlp.down_proj.weight.detach()),
            })
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        self.columns = {1: slice(0, q), 2: slice(q, q + kv), 3: slice(q + kv, q + 2 * kv)}
        inter = inner.layers[0].mlp.gate_proj.weight.shape[0]
        self.columns.update({5: slice(0, inter), 7: slice(inter, 2 * inter)})
        self.scale = self.head_dim ** -0.5
        self.widths = {"qkv": q + 2 * kv, "o": inner.config.hidden_size, "gate_up": 2 * inter,
                       "down": inner.config.hidden_size}
        assert set(MODULES) == {m for ids in PROJECTIONS.values() for m in ids}

    def new_cache(self, slots: int, max_len: int) -> SlotCache:
        return SlotCache(len(self.layers), slots, self.kv_heads, self.head_dim, max_len)

    @torch.inference_mode()
    def forward(self, segments: list[Segment], cache: SlotCache) -> list[torch.Tensor | None]:
        """Run every segment one step; return per segment its logits ([1 or count, vocab]) or None."""
        plan = _Plan(segments, cache, self)
        x = self._embed(segments, plan)
        cos, sin = self.rotary(x, plan.positions.unsqueeze(0))
        cos, sin = cos[0].unsqueeze(1), sin[0].unsqueeze(1)
        for index, weights in enumerate(self.layers):
            x = self._layer(x, index, weights, plan, cache, cos, sin)
        picked = x[plan.logit_rows] if plan.logit_rows.numel() else x[:0]
        logits = self.lm_head(self.norm(picked))
        out, offset = [], 0
        for seg in segments:
            n = {"last": 1, "all": seg.count, "none": 0}[seg.logits]
            out.append(logits[offset:offset + n] if n else None)
            offset += n
        return out

    def _embed(self, segments, plan) -> torch.Tensor:
        x = F.embedding(plan.ids.clamp(max=self.embed.shape[0] - 1), self.embed)  # table rows: set below
        for seg, (t0, t1) in zip(segments, plan.spans, strict=True):
            if seg.embeds is not None:
                x[t0:t1] = seg.embeds.to(x.dtype)
        return x

    def _stacked(self, adapter, layer: int, name: str):
        """(A^T [in, ranks], B^T [ranks, out]) of an adapter's modules in one projection: the A's side by
        side, the B's placed at their output columns (zeros elsewhere); None when it has none there."""
        key = (layer, name)
        if key not in adapter.fused:
            parts = [(m, *adapter.weights[(layer, m)]) for m in PROJECTIONS[name] if (layer, m) in adapter.weights]
            if not parts:
                adapter.fused[key] = None
            else:
                a_t = torch.cat([a for _, a, _ in parts]).T.contiguous()
                b_t = torch.zeros(a_t.shape[1], self.widths[name])
                row = 0
                for module, a, b in parts:
                    cols = self.columns.get(module, slice(None)) if len(PROJECTIONS[name]) > 1 else slice(None)
                    b_t[row:row + a.shape[0], cols] = b.T
                    row += a.shape[0]
                adapter.fused[key] = (a_t, b_t)
        return adapter.fused[key]

    def _lora(self, out, h, plan, layer: int, name: str) -> None:
        """Add each adapter's update to its own rows (a partial adapter's: to its fake-id rows only)."""
        for adapter, t0, t1, rows in plan.groups:
            stacked = self._stacked(adapter, layer, name)
            if stacked is None:
                continue
            if rows is None:
                out[t0:t1].addmm_(h[t0:t1] @ stacked[0], stacked[1])
            elif rows.numel():
                out.index_add_(0, rows, (h[rows] @ stacked[0]) @ stacked[1])

    def _layer(self, x, index, w, plan, cache, cos, sin) -> torch.Tensor:
        h = w["in_norm"](x)
        qkv = w["qkv"](h)
        self._lora(qkv, h, plan, index, "qkv")
        t = x.shape[0]
        q = qkv[:, self.columns[1]].view(t, self.heads, self.head_dim)
        k = qkv[:, self.columns[2]].view(t, self.kv_heads, self.head_dim)
        v = qkv[:, self.columns[3]].view(t, self.kv_heads, self.head_dim)
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        cache.k[index][plan.slots, :, plan.positions] = k
        cache.v[index][plan.slots, :, plan.positions] = v
        attn = self._attention(q, index, plan, cache)
        o = w["o"](attn)
        self._lora(o, attn, plan, index, "o")
        x = x + o
        h = w["post_norm"](x)
        gate_up = w["gate_up"](h)
        self._lora(gate_up, h, plan, index, "gate_up")
        inter = gate_up.shape[1] // 2
        m = F.silu(gate_up[:, :inter]) * gate_up[:, inter:]
        down = w["down"](m)
        self._lora(down, m, plan, index, "down")
        return x + down

    def _attention(self, q, index, plan, cache) -> torch.Tensor:
        t = q.shape[0]
        out = torch.empty(t, self.heads * self.head_dim)
        keys, values = cache.k[index], cache.v[index]
        rep = self.heads // self.kv_heads
        if plan.single_rows.numel():
            span = plan.single_len
            qs = q.new_zeros(plan.slot_count, self.kv_heads, rep, self.head_dim)
            qs[plan.single_slots] = q[plan.single_rows].view(-1, self.kv_heads, rep, self.head_dim)
            got = F.scaled_dot_product_attention(qs, keys[:plan.slot_count, :, :span],
                                                 values[:plan.slot_count, :, :span],
                                                 attn_mask=plan.single_mask, scale=self.scale)
            out[plan.single_rows] = got[plan.single_slots].reshape(-1, self.heads * self.head_dim)
        for seg, (t0, t1), mask in plan.multi:
            end = seg.start + seg.count
            qm = q[t0:t1].transpose(0, 1).unsqueeze(0)  # [1, heads, n, dim]
            got = F.scaled_dot_product_attention(qm, keys[seg.slot:seg.slot + 1, :, :end],
                                                 values[seg.slot:seg.slot + 1, :, :end], attn_mask=mask,
                                                 scale=self.scale, enable_gqa=True)
            out[t0:t1] = got[0].transpose(0, 1).reshape(t1 - t0, -1)
        return out


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class _Plan:
    """Index tensors of one step, computed once and used by every layer."""

    def __init__(self, segments: list[Segment], cache: SlotCache, model: BatchedLlama):
        ids, slots, positions, logit_rows, spans, groups = [], [], [], [], [], []
        offset = 0
        for seg in segments:
            ids.extend(seg.ids)
            slots.extend([seg.slot] * seg.count)
            positions.extend(range(seg.start, seg.start + seg.count))
            spans.append((offset, offset + seg.count))
            if seg.logits == "last":
                logit_rows.append(offset + seg.count - 1)
            elif seg.logits == "all":
                logit_rows.extend(range(offset, offset + seg.count))
            if seg.adapter is not None:
                if groups and groups[-1][0] is seg.adapter and groups[-1][2] == offset:
                    groups[-1] = (seg.adapter, groups[-1][1], offset + seg.count)
                else:
                    groups.append((seg.adapter, offset, offset + seg.count))
            offset += seg.count
        cache.reserve(max(p for p in positions) + 1, max(slots) + 1)
        self.ids = torch.tensor(ids, dtype=torch.long)
        self.slots = torch.tensor(slots, dtype=torch.long)
        self.positions = torch.tensor(positions, dtype=torch.long)
        self.logit_rows = torch.tensor(logit_rows, dtype=torch.long)
        self.spans = spans
        fake = self.ids >= model.embed.shape[0]
        # per adapter's rows: None (every row) or, for a partial adapter, the rows of fake prompt ids
        self.groups = [(adapter, t0, t1, (t0 + fake[t0:t1].nonzero().flatten()) if adapter.partial else None)
                       for adapter, t0, t1 in groups]
        self._split(segments, model)

    def _split(self, segments, model) -> None:
        single = [(seg, t0) for seg, (t0, _) in zip(segments, self.spans, strict=True) if seg.count == 1]
        self.single_rows = torch.tensor([t0 for _, t0 in single], dtype=torch.long)
        self.single_slots = torch.tensor([seg.slot for seg, _ in single], dtype=torch.long)
        self.slot_count = max((seg.slot for seg, _ in single), default=-1) + 1
        self.single_len = max((seg.start + 1 for seg, _ in single), default=0)
        mask = torch.zeros(self.slot_count, 1, 1, max(1, self.single_len), dtype=torch.bool)
        mask[:, :, :, 0] = True  # idle slots attend to something (their output is dropped)
        for seg, _ in single:
            mask[seg.slot, :, :, :seg.start + 1] = True
        self.single_mask = mask
        self.multi = []
        for seg, span in zip(segments, self.spans, strict=True):
            if seg.count > 1:
                rows = torch.arange(seg.start, seg.start + seg.count).unsqueeze(1)
                keys = torch.arange(seg.start + seg.count).unsqueeze(0)
                self.multi.append((seg, span, keys <= rows))
