"""The model side of the CPU engine: load weights, embed prompts, run batched forward passes.

`forward` runs one step for many requests (engine.Engine schedules them); `step` runs one request
alone with its own cache, token by token (the unbatched engine, kept for comparisons and tools).
"""

import json
from pathlib import Path

import numpy as np
import torch

from .checkpoint import load_model
from .forward import BatchedLlama, Segment
from .lora import LoraManager
from .requests import Limits, RequestError
from .sampling import sample_rows

DEFAULT_MAX_NUM_TOKENS = 256  # tokens per step when the engine config does not say


def load_engine_config(engine_dir):
    """Read the TensorRT-LLM style config.json that describes the CPU engine."""
    path = Path(engine_dir) / "config.json"
    config = json.loads(path.read_text())
    if "build_config" not in config or "hf_model_dir" not in config:
        raise RuntimeError(f"{path} is not a CPU engine config (needs build_config and hf_model_dir).")
    return config


class EngineRunner:
    def __init__(self, engine_dir, params, logger=None, config=None):
        """`config`: an engine config already in hand (the llmapi stand-in makes one from model.yaml)."""
        self.config = config or load_engine_config(engine_dir)
        build = self.config["build_config"]
        hf_dir = Path(engine_dir) / self.config["hf_model_dir"]
        self.model = load_model(hf_dir)
        self.vocab_size = self.model.get_input_embeddings().weight.shape[0]
        self.limits = Limits(
            max_input_len=int(build["max_input_len"]),
            max_seq_len=int(build["max_seq_len"]),
            vocab_size=self.vocab_size,
        )
        self.max_batch_size = int(build.get("max_batch_size") or 8)
        self.max_num_tokens = int(build.get("max_num_tokens") or DEFAULT_MAX_NUM_TOKENS)
        self.logger = logger
        self.lora = LoraManager(self.model, self.config, params, log=self._warn)
        self.batched = BatchedLlama(self.model)

    @property
    def kv_bytes_per_token(self) -> int:
        b = self.batched
        return 2 * len(b.layers) * b.kv_heads * b.head_dim * 4

    def _warn(self, text):
        if self.logger is not None:
            self.logger.log_warn(text)

    def attach_lora(self, gen):
        """Resolve the request's adapter from its LoRA inputs (held in use until release); raises LoraError."""
        gen.lora_adapter = self.lora.acquire(gen.lora_task_id, gen.lora_weights, gen.lora_config)
        gen.lora_weights = gen.lora_config = None

    def release(self, gen):
        gen.cache = None
        gen.prompt_embeds = None
        self.lora.release(gen.lora_adapter)
        gen.lora_adapter = None

    # ---- prompt embeddings ---------------------------------------------------------------------
    def prepare(self, gen):
        """Embed a prompt that uses a prompt table once (RequestError when the table does not fit)."""
        if gen.prompt_table is None or gen.prompt_embeds is not None:
            return
        ids = torch.tensor(gen.input_ids, dtype=torch.long)
        table = torch.from_numpy(np.asarray(gen.prompt_table, dtype=np.float32))
        fake = ids >= self.vocab_size
        rows = ids[fake] - self.vocab_size
        if rows.numel() and int(rows.max()) >= table.shape[0]:
            raise RequestError(
                f"Token id {int(rows.max()) + self.vocab_size} points past the prompt table ({table.shape[0]} rows)."
            )
        if table.shape[1] != self.model.config.hidden_size:
            raise RequestError(
                f"prompt_embedding_table has width {table.shape[1]}, the model's hidden size is "
                f"{self.model.config.hidden_size}."
            )
        with torch.inference_mode():
            embeds = self.batched.embed[ids.clamp(max=self.vocab_size - 1)].clone()
            embeds[fake] = table[rows]
        gen.prompt_embeds = embeds

    def chunk_embeds(self, gen, start, end):
        """Input embeddings of positions start..end-1 when the prompt uses a prompt table, else None."""
        if gen.prompt_embeds is None:
            return None
        prompt = len(gen.input_ids)
        part = gen.prompt_embeds[start:min(end, prompt)]
        if end <= prompt:
            return part
        tail = torch.tensor(gen.output_ids[max(start, prompt) - prompt:end - prompt], dtype=torch.long)
        return torch.cat([part, self.batched.embed[tail]])

    # ---- running -------------------------------------------------------------------------------
    def forward(self, segments, cache):
        return self.batched.forward(segments, cache)

    def step(self, gen):
        """Run one forward pass for `gen` alone; return (token, logprob) or (None, None) when it ends."""
        from .engine import accept_token

        if gen.cache is None:
            self.prepare(gen)
            gen.cache = self.batched.new_cache(1, self.limits.max_seq_len)
            start, ids = 0, list(gen.input_ids)
            logits = "all" if gen.return_context_logits else "last"
        else:
            start, ids, logits = len(gen.input_ids) + len(gen.output_ids) - 1, [gen.output_ids[-1]], "last"
        segment = Segment(slot=0, start=start, ids=ids, adapter=gen.lora_adapter,
                          embeds=self.chunk_embeds(gen, start, start + len(ids)), logits=logits)
        out = self.forward([segment], gen.cache)[0]
        if logits == "all":
            gen.context_logits = out.numpy().copy()[None]
        token, logprob = sample_rows([gen], out[-1:].clone())[0]
        if not accept_token(gen, token):
            return None, None
        return token, logprob
