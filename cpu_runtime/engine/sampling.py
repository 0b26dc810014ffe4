"""Per-row sampling for one batched step: each request keeps its own settings and random generator.

Logits are adjusted per row (embedding bias, repetition/presence/frequency penalties, bad words,
min length), log-probabilities are taken after those adjustments, then each row is greedy or sampled
(temperature, then top-k, then top-p) with its own seeded generator, so a row's tokens do not depend
on the other rows of the batch.
"""

from __future__ import annotations

import numpy as np
import torch

NEG_INF = float("-inf")


def make_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed) & 0xFFFFFFFFFFFFFFFF)


def is_greedy(gen) -> bool:
    """top_k 1 keeps one candidate whatever top_p says: greedy, as in TensorRT-LLM's top-k-then-top-p."""
    return not (gen.top_k != 1 and (gen.top_k > 1 or gen.top_p > 0.0))


def _needs_adjusting(gen) -> bool:
    return (gen.embedding_bias is not None or gen.repetition_penalty != 1.0 or bool(gen.bad_words)
            or bool((gen.presence_penalty or gen.frequency_penalty) and gen.output_ids))


def adjust(gen, logits: torch.Tensor) -> None:
    """Apply one request's logit adjustments in place (a [vocab] row)."""
    history = gen.input_ids + gen.output_ids
    vocab = logits.shape[0]
    if gen.embedding_bias is not None:
        bias = torch.from_numpy(np.asarray(gen.embedding_bias, dtype=np.float32).reshape(-1))
        logits[: bias.shape[0]] += bias[:vocab]
    if gen.repetition_penalty != 1.0 and history:
        seen = torch.tensor(sorted(set(i for i in history if 0 <= i < vocab)), dtype=torch.long)
        values = logits[seen]
        logits[seen] = torch.where(values > 0, values / gen.repetition_penalty, values * gen.repetition_penalty)
    if (gen.presence_penalty or gen.frequency_penalty) and gen.output_ids:
        counts = torch.bincount(torch.tensor(gen.output_ids), minlength=vocab).float()[:vocab]
        logits -= gen.frequency_penalty * counts + gen.presence_penalty * (counts > 0).float()
    for word in gen.bad_words:
        prefix = word[:-1]
        if (not prefix or gen.output_ids[-len(prefix):] == prefix) and 0 <= word[-1] < vocab:
            logits[word[-1]] = NEG_INF


def _draw(gen, logits: torch.Tensor) -> int:
    scaled = logits / gen.temperature
    if gen.top_k > 1:
        kth = torch.topk(scaled, min(gen.top_k, scaled.shape[0])).values[-1]
        scaled[scaled < kth] = NEG_INF
    if 0.0 < gen.top_p < 1.0:
        ordered, order = torch.sort(scaled, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        drop = torch.cumsum(probs, dim=-1) - probs > gen.top_p
        scaled[order[drop]] = NEG_INF
    probs = torch.softmax(scaled, dim=-1)
    if gen.generator is None:
        gen.generator = make_generator(gen.seed)
    return int(torch.multinomial(probs, 1, generator=gen.generator))


def sample_rows(gens: list, logits: torch.Tensor) -> list[tuple[int, float]]:
    """One (token, log-probability) per row of `logits` [rows, vocab] (modified in place)."""
    if not gens:
        return []
    vocab = logits.shape[1]
    for row, gen in enumerate(gens):
        if _needs_adjusting(gen):
            adjust(gen, logits[row])
        if 0 <= gen.end_id < vocab and len(gen.output_ids) < gen.min_length:
            logits[row, gen.end_id] = NEG_INF
    log_probs = torch.log_softmax(logits, dim=-1)
    greedy = torch.argmax(logits, dim=-1).tolist()
    out = []
    for row, gen in enumerate(gens):
        token = greedy[row] if is_greedy(gen) else _draw(gen, logits[row])
        out.append((token, float(log_probs[row, token])))
    return out
