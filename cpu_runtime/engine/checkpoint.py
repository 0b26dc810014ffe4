"""A Llama-style Hugging Face folder (config.json, *.safetensors) as the torch modules the engine reads, built with
torch alone: importing transformers' model classes costs an engine process 2 to 3 CPU seconds at every start
(torch.distributed, dynamo and hub kernels come with them; the demo's engine stub took 3.6 CPU s to start instead of
6.6 on a busy machine), and every tritonserver start loads an engine.

The modules carry the names and shapes of transformers' LlamaForCausalLM (`model.layers[i].self_attn.q_proj`, ...,
`lm_head`, `config`), so forward.py and lora.py read them the same way; the norm and the rotary embedding compute
what transformers' LlamaRMSNorm and default-RoPE LlamaRotaryEmbedding compute, in the same order (the same bits).
A folder of another kind (another architecture, scaled RoPE) gives None from `load_light`; `load_model` then loads
it with transformers (which is also the reference the tests compare against: `load_with_transformers`).
The tensors come from safe_open's file mapping, as transformers' loader takes them (pages shared by the processes
that load the same file).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

LIGHT_ARCHITECTURES = ("LlamaForCausalLM",)


class RmsNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(size, device="meta"), requires_grad=False)
        self.variance_epsilon = eps

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        dtype = hidden.dtype
        hidden = hidden.to(torch.float32)
        variance = hidden.pow(2).mean(-1, keepdim=True)
        hidden = hidden * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden.to(dtype)


class DefaultRope(nn.Module):
    """cos and sin of each position ([batch, positions, head_dim]) for RoPE without scaling."""

    def __init__(self, base: float, head_dim: int):
        super().__init__()
        self.inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def _linear(inputs: int, outputs: int) -> nn.Linear:
    return nn.Linear(inputs, outputs, bias=False, device="meta")


def _layer(cfg: SimpleNamespace) -> nn.Module:
    hidden, head_dim, inter = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    attn = nn.Module()
    attn.q_proj = _linear(hidden, cfg.num_attention_heads * head_dim)
    attn.k_proj = _linear(hidden, cfg.num_key_value_heads * head_dim)
    attn.v_proj = _linear(hidden, cfg.num_key_value_heads * head_dim)
    attn.o_proj = _linear(cfg.num_attention_heads * head_dim, hidden)
    mlp = nn.Module()
    mlp.gate_proj, mlp.up_proj, mlp.down_proj = _linear(hidden, inter), _linear(hidden, inter), _linear(inter, hidden)
    layer = nn.Module()
    layer.self_attn, layer.mlp = attn, mlp
    layer.input_layernorm = RmsNorm(hidden, cfg.rms_norm_eps)
    layer.post_attention_layernorm = RmsNorm(hidden, cfg.rms_norm_eps)
    return layer


class LlamaCheckpoint(nn.Module):
    """LlamaForCausalLM's module tree with its weights, for inference only."""

    def __init__(self, cfg: SimpleNamespace):
        super().__init__()
        self.config = cfg
        inner = nn.Module()
        inner.config = cfg
        # given its (meta) weight, Embedding skips its random init: on meta tensors that init goes through torch's
        # Python reference kernels, whose first use imports torch._dynamo (2.7 CPU s of an engine's start)
        inner.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size,
                                          _weight=torch.empty(cfg.vocab_size, cfg.hidden_size, device="meta"))
        inner.layers = nn.ModuleList(_layer(cfg) for _ in range(cfg.num_hidden_layers))
        inner.norm = RmsNorm(cfg.hidden_size, cfg.rms_norm_eps)
        inner.rotary_emb = DefaultRope(cfg.rope_theta, cfg.head_dim)
        self.model = inner
        self.lm_head = _linear(cfg.hidden_size, cfg.vocab_size)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embed_tokens


def light_config(hf_dir: Path) -> SimpleNamespace | None:
    """The folder's config.json as attributes when this module can build its model, else None."""
    raw = json.loads((Path(hf_dir) / "config.json").read_text())
    rope = raw.get("rope_parameters") or {"rope_type": "default", "rope_theta": raw.get("rope_theta", 10000.0)}
    if (raw.get("architectures") or [None])[0] not in LIGHT_ARCHITECTURES or raw.get("rope_scaling") \
            or rope.get("rope_type", "default") != "default":
        return None
    cfg = SimpleNamespace(**raw)
    cfg.head_dim = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
    cfg.num_key_value_heads = raw.get("num_key_value_heads") or raw["num_attention_heads"]
    cfg.rope_theta = float(rope.get("rope_theta", 10000.0))
    cfg.rms_norm_eps = float(raw.get("rms_norm_eps", 1e-6))
    for flag in ("attention_bias", "mlp_bias", "tie_word_embeddings"):
        setattr(cfg, flag, bool(raw.get(flag, False)))
    cfg.hidden_act = raw.get("hidden_act", "silu")
    return cfg


def load_light(hf_dir: Path) -> LlamaCheckpoint | None:
    """The folder's model as float32 modules (None when light_config says no)."""
    from safetensors import safe_open

    cfg = light_config(hf_dir)
    files = sorted(Path(hf_dir).glob("*.safetensors"))
    if cfg is None or not files:
        return None
    state = {}
    for file in files:
        with safe_open(str(file), framework="pt") as opened:
            for name in opened.keys():
                state[name] = opened.get_tensor(name).to(torch.float32)
    model = LlamaCheckpoint(cfg)
    if "lm_head.weight" not in state and cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True, assign=True)
    return model.eval().requires_grad_(False)


def load_with_transformers(hf_dir: Path) -> nn.Module:
    """The folder's model as transformers builds it (float32, eval mode)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()


def load_model(hf_dir: Path) -> nn.Module:
    """The folder's model for the engine: with torch alone when it is Llama-style, else through transformers."""
    return load_light(hf_dir) or load_with_transformers(hf_dir)


# tokenizer_config.json classes transformers offers as they are: loaded by that class, the tokenizer needs no model
# config (AutoTokenizer reads config.json and imports the model's config class, and with it torch.distributed and
# torch._dynamo: 3.9 CPU s for the demo's tokenizer in a process that has torch, against 1.3)
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(hf_dir: Path):
    """The folder's transformers tokenizer: through the class its tokenizer_config.json names when that is a generic
    one (and it has no code of its own), else AutoTokenizer; the same tokenizer either way."""
    import transformers

    try:
        settings = json.loads((Path(hf_dir) / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = {}
    name = settings.get("tokenizer_class")
    if name in GENERIC_TOKENIZER_CLASSES and not settings.get("auto_map") and hasattr(transformers, name):
        return getattr(transformers, name).from_pretrained(str(hf_dir))
    return transformers.AutoTokenizer.from_pretrained(str(hf_dir))
