"""The model side of the CPU engine: load weights, prefill/decode one request, sample a token."""

import json
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, DynamicCache

from .lora import LoraManager
from .requests import Limits, RequestError


def load_engine_config(engine_dir):
    """Read the TensorRT-LLM style config.json that describes the CPU engine."""
    path = Path(engine_dir) / "config.json"
    config = json.loads(path.read_text())
    if "build_config" not in config or "hf_model_dir" not in config:
        raise RuntimeError(f"{path} is not a CPU engine config (needs build_config and hf_model_dir).")
    return config


class EngineRunner:
    def __init__(self, engine_dir, params, logger=None):
        self.config = load_engine_config(engine_dir)
        build = self.config["build_config"]
        hf_dir = Path(engine_dir) / self.config["hf_model_dir"]
        self.model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
        self.vocab_size = self.model.get_input_embeddings().weight.shape[0]
        self.limits = Limits(
            max_input_len=int(build["max_input_len"]),
            max_seq_len=int(build["max_seq_len"]),
            vocab_size=self.vocab_size,
        )
        self.logger = logger
        self.lora = LoraManager(self.model, self.config, params, log=self._warn)

    def _warn(self, text):
        if self.logger is not None:
            self.logger.log_warn(text)

    def attach_lora(self, gen):
        """Resolve the request's adapter from its LoRA inputs (held in use until release); raises LoraError."""
        gen.lora_adapter = self.lora.acquire(gen.lora_task_id, gen.lora_weights, gen.lora_config)
        gen.lora_weights = gen.lora_config = None

    def release(self, gen):
        gen.cache = None
        self.lora.release(gen.lora_adapter)
        gen.lora_adapter = None

    def _prefill_inputs(self, gen):
        ids = torch.tensor([gen.input_ids], dtype=torch.long)
        if gen.prompt_table is None:
            return {"input_ids": ids}
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
        embeds = self.model.get_input_embeddings()(ids.clamp(max=self.vocab_size - 1))
        embeds[fake] = table[rows].to(embeds.dtype)
        return {"inputs_embeds": embeds}

    @torch.inference_mode()
    def step(self, gen):
        """Run one forward pass for `gen`; return (token, logprob) or (None, None) when it ends."""
        with self.lora.hooks.use(gen.lora_adapter):
            if gen.cache is None:
                gen.cache = DynamicCache()
                gen.generator = torch.Generator().manual_seed(int(gen.seed) & 0xFFFFFFFFFFFFFFFF)
                out = self.model(**self._prefill_inputs(gen), past_key_values=gen.cache, use_cache=True)
                if gen.return_context_logits:
                    gen.context_logits = out.logits.float().numpy()
            else:
                last = torch.tensor([[gen.output_ids[-1]]], dtype=torch.long)
                out = self.model(input_ids=last, past_key_values=gen.cache, use_cache=True)
        logits = out.logits[0, -1].float()
        token, logprob = self._sample(gen, logits)
        if token == gen.end_id:
            gen.finished = True
            return None, None
        produced = len(gen.output_ids) + 1
        if produced >= gen.max_new_tokens:
            gen.finished = True
        sequence = gen.output_ids + [token]
        if any(len(w) <= len(sequence) and sequence[-len(w):] == w for w in gen.stop_words):
            gen.finished = True
        return token, logprob

    def _sample(self, gen, logits):
        history = gen.input_ids + gen.output_ids
        if gen.embedding_bias is not None:
            bias = torch.from_numpy(np.asarray(gen.embedding_bias, dtype=np.float32).reshape(-1))
            logits[: bias.shape[0]] += bias[: logits.shape[0]]
        if gen.repetition_penalty != 1.0 and history:
            seen = torch.tensor(sorted(set(i for i in history if i < logits.shape[0])), dtype=torch.long)
            values = logits[seen]
            logits[seen] = torch.where(values > 0, values / gen.repetition_penalty, values * gen.repetition_penalty)
        if (gen.presence_penalty or gen.frequency_penalty) and gen.output_ids:
            counts = torch.bincount(torch.tensor(gen.output_ids), minlength=logits.shape[0]).float()
            logits -= gen.frequency_penalty * counts + gen.presence_penalty * (counts > 0).float()
        for word in gen.bad_words:
            prefix = word[:-1]
            if not prefix or gen.output_ids[-len(prefix):] == prefix:
                logits[word[-1]] = float("-inf")
        if 0 <= gen.end_id < logits.shape[0] and len(gen.output_ids) < gen.min_length:
            logits[gen.end_id] = float("-inf")
        log_probs = torch.log_softmax(logits, dim=-1)
        # top_k 1 keeps one candidate whatever top_p says: greedy, as in TensorRT-LLM's top-k-then-top-p sampling
        sampling = gen.top_k != 1 and (gen.top_k > 1 or gen.top_p > 0.0)
        if not sampling:
            token = int(torch.argmax(logits))
            return token, float(log_probs[token])
        scaled = logits / gen.temperature
        if gen.top_k > 1:
            kth = torch.topk(scaled, min(gen.top_k, scaled.shape[0])).values[-1]
            scaled[scaled < kth] = float("-inf")
        if 0.0 < gen.top_p < 1.0:
            ordered, order = torch.sort(scaled, descending=True)
            cumulative = torch.cumsum(torch.softmax(ordered, dim=-1), dim=-1)
            drop = cumulative - torch.softmax(ordered, dim=-1) > gen.top_p
            scaled[order[drop]] = float("-inf")
        probs = torch.softmax(scaled, dim=-1)
        token = int(torch.multinomial(probs, 1, generator=gen.generator))
        return token, float(log_probs[token])
