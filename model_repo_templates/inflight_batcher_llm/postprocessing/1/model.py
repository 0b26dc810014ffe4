"""Detokenizer step (Triton Python model).

By default OUTPUT is the tokenizer's text of the tokens, valid UTF-8 in every response as upstream
(a streamed chunk that ends inside a character shows U+FFFD there). With `token_bytes` true each
token becomes its exact bytes instead (byte-level BPE and SentencePiece byte-fallback both map to raw
bytes): a client that joins the bytes of the chunks before decoding keeps every space and character.
"""

import json

import numpy as np
import tokenizer_only  # noqa: F401  model_repo_templates/shared/, copied here: no PyTorch
import triton_python_backend_utils as pb_utils
from fast_tokenizer import load_tokenizer  # model_repo_templates/shared/, copied here
from request_loop import answer_each

PASSTHROUGH = {
    "CUM_LOG_PROBS": "OUT_CUM_LOG_PROBS",
    "OUTPUT_LOG_PROBS": "OUT_OUTPUT_LOG_PROBS",
    "CONTEXT_LOGITS": "OUT_CONTEXT_LOGITS",
    "GENERATION_LOGITS": "OUT_GENERATION_LOGITS",
    "BATCH_INDEX": "OUT_BATCH_INDEX",
    "SEQUENCE_INDEX": "OUT_SEQUENCE_INDEX",
}


def _param(config, key, default=""):
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if value.startswith("${") else value


def _byte_level_decoder():
    """Inverse of GPT-2's bytes-to-unicode table (printable stand-ins for every byte)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def token_byte_table(tokenizer, skip_special_tokens):
    """List index -> bytes for every token id."""
    probe = tokenizer.convert_ids_to_tokens(tokenizer.encode(" a", add_special_tokens=False))
    byte_level = any(t.startswith("\u0120") for t in probe)
    inverse = _byte_level_decoder()
    special = set(tokenizer.all_special_ids)
    table = []
    for token_id, token in enumerate(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))):
        if token is None or (skip_special_tokens and token_id in special):
            table.append(b"")
        elif token_id in special:
            table.append(token.encode("utf-8"))
        elif byte_level and all(ch in inverse for ch in token):
            table.append(bytes(inverse[ch] for ch in token))
        elif len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            table.append(bytes([int(token[3:5], 16)]))
        elif "\u2581" in token:
            table.append(token.replace("\u2581", " ").encode("utf-8"))
        else:
            table.append(tokenizer.decode([token_id]).encode("utf-8"))
    return table


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        tokenizer = load_tokenizer(_param(config, "tokenizer_dir"))
        self.skip_special = _param(config, "skip_special_tokens", "true").lower() in ("true", "1")
        self.tokenizer = tokenizer
        as_bytes = _param(config, "token_bytes", "false").lower() in ("true", "1")
        self.table = token_byte_table(tokenizer, self.skip_special) if as_bytes else None

    def _decode(self, ids):
        if self.table is None:
            return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special).encode("utf-8")
        size = len(self.table)
        return b"".join(self.table[i] for i in ids if 0 <= i < size)

    def _one(self, request):
        tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS_BATCH").as_numpy()
        lengths = pb_utils.get_input_tensor_by_name(request, "SEQUENCE_LENGTH").as_numpy()
        tokens = tokens.reshape(tokens.shape[0], -1, tokens.shape[-1])
        lengths = lengths.reshape(tokens.shape[0], -1)
        texts = np.empty(lengths.shape, dtype=object)
        for b in range(tokens.shape[0]):
            for beam in range(tokens.shape[1]):
                texts[b, beam] = self._decode(tokens[b, beam, : lengths[b, beam]].tolist())
        outputs = [pb_utils.Tensor("OUTPUT", texts)]
        for name, out_name in PASSTHROUGH.items():
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is not None:
                outputs.append(pb_utils.Tensor(out_name, tensor.as_numpy()))
        return pb_utils.InferenceResponse(outputs)

    def execute(self, requests):
        return answer_each(requests, self._one)
