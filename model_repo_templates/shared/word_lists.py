"""Word lists the preprocessing models turn into engine tensors: stop and bad words in TensorRT-LLM's [2, N] layout,
and an embedding bias from words and weights.

Copied by the repository writer into each model's 1/ folder that lists it under `shared` (template.yaml).
"""

import numpy as np
from model_params import text_of


def word_list(tokenizer, rows):
    """Each row's words as [batch, 2, width] int32: token ids, then the cumulative end offset of each word
    (-1 after the last); empty words and words with no tokens are left out."""
    encoded = []
    for words in rows:
        ids, offsets = [], []
        for word in words if words is not None else []:
            text = text_of(word)
            token_ids = tokenizer.encode(text, add_special_tokens=False) if text else []
            if token_ids:
                ids += token_ids
                offsets.append(len(ids))
        encoded.append((ids, offsets))
    width = max([1] + [len(ids) for ids, _ in encoded])
    out = np.zeros((len(encoded), 2, width), dtype=np.int32)
    out[:, 1, :] = -1
    for row, (ids, offsets) in enumerate(encoded):
        out[row, 0, : len(ids)] = ids
        out[row, 1, : len(offsets)] = offsets
    return out


def embedding_bias(tokenizer, words, weights, batch, vocab_size):
    """[batch, vocab_size] float32 with each word's weight added at each of its tokens; [batch, 0] when the request
    has no bias words or weights."""
    if words is None or weights is None:
        return np.zeros((batch, 0), dtype=np.float32)
    bias = np.zeros((batch, vocab_size), dtype=np.float32)
    for row in range(batch):
        for word, weight in zip(words[row], weights[row], strict=False):
            for token in tokenizer.encode(text_of(word), add_special_tokens=False):
                bias[row, token] += weight
    return bias
