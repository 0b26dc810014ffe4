"""Tokenizer step (Triton Python model) of the text and the multimodal layouts.

In the multimodal layout (`max_num_images` set) a request may carry images; each image marker in the
text, or the start of the prompt when there is none, becomes that image's fake token ids
vocab_size + k*T .. vocab_size + (k+1)*T - 1, which tensorrt_llm reads from the prompt table. T, the
tokens per image, is max_prompt_embedding_table_size // max_batch_size // max_num_images of the
engine's config.json, as in the TensorRT-LLM backend.
"""

import json
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from transformers import AutoTokenizer


def _param(config, key, default=""):
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if value.startswith("${") else value


def _as_bool(text):
    return str(text).strip().lower() in ("true", "1", "yes")


def _optional(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


IMAGE_INPUTS = {"IMAGE_INPUT": "image_input", "IMAGE_BYTES": "image_bytes_input", "IMAGE_URL": "image_url_input"}


def image_count(request, max_images):
    """Images in this request (0 without any); ValueError for mixed kinds or too many images."""
    present = []
    for name in IMAGE_INPUTS:
        value = _optional(request, name)
        if value is not None and value.size:
            present.append((name, value))
    if not present:
        return 0
    if len(present) > 1:
        kinds = " and ".join(IMAGE_INPUTS[name] for name, _ in present)
        raise ValueError(f"Send one kind of image input per request; this request has {kinds}.")
    if not max_images:
        raise ValueError("This deployment is text-only: it takes no images.")
    name, value = present[0]
    if name != "IMAGE_INPUT":
        raise ValueError(f"{IMAGE_INPUTS[name]} needs the server-side image processor of mllama, llava-onevision or "
                         "qwen2-vl, which this deployment does not have; send preprocessed pixels as image_input.")
    count = value.shape[1] if value.ndim == 5 else 1
    if count > max_images:
        raise ValueError(f"This deployment takes at most {max_images} image(s) per request; got {count}.")
    return count


def tokens_per_image(engine_dir, max_images):
    """(vocab_size, tokens per image) from the LLM engine's config.json."""
    config = json.loads((Path(engine_dir) / "config.json").read_text())
    build = config["build_config"]
    tokens = int(build.get("max_prompt_embedding_table_size") or 0) // int(build["max_batch_size"]) // max_images
    if tokens <= 0:
        raise ValueError(f"The engine in {engine_dir} has no room for images (max_prompt_embedding_table_size).")
    return int(config["pretrained_config"]["vocab_size"]), tokens


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        tokenizer_dir = _param(config, "tokenizer_dir")
        self.add_special_tokens = _as_bool(_param(config, "add_special_tokens", "false"))
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir, padding_side="left")
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.end_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id
        self.vocab_size = len(self.tokenizer)
        self.max_images = int(_param(config, "max_num_images", "0") or 0)
        self.marker = _param(config, "image_marker", "<image>") or "<image>"
        if self.max_images:
            self.fake_base, self.image_tokens = tokens_per_image(_param(config, "engine_dir"), self.max_images)

    def _encode(self, text, images):
        """Token ids of one prompt, with each image's fake ids at its marker (or at the start)."""
        if images == 0:
            return self.tokenizer.encode(text, add_special_tokens=self.add_special_tokens)
        pieces = text.split(self.marker)
        markers = len(pieces) - 1
        if markers == 0:
            pieces = [""] * images + [text]
        elif markers != images:
            raise ValueError(f"The prompt has {markers} image marker(s) '{self.marker}' for {images} image(s); "
                             "put one marker where each image goes, or none.")
        ids = []
        for index, piece in enumerate(pieces):
            if index:
                start = self.fake_base + (index - 1) * self.image_tokens
                ids += range(start, start + self.image_tokens)
            first = index == 0 and self.add_special_tokens
            if piece or first:
                ids += self.tokenizer.encode(piece, add_special_tokens=first)
        return ids

    def _word_list(self, rows):
        """Encode each row's words to TensorRT-LLM's [2, N] layout: ids, then cumulative end offsets."""
        encoded = []
        for words in rows:
            ids, offsets = [], []
            for word in words if words is not None else []:
                text = _text(word)
                if not text:
                    continue
                token_ids = self.tokenizer.encode(text, add_special_tokens=False)
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

    def _embedding_bias(self, words, weights, batch):
        if words is None or weights is None:
            return np.zeros((batch, 0), dtype=np.float32)
        bias = np.zeros((batch, self.vocab_size), dtype=np.float32)
        for row in range(batch):
            for word, weight in zip(words[row], weights[row], strict=False):
                for token in self.tokenizer.encode(_text(word), add_special_tokens=False):
                    bias[row, token] += weight
        return bias

    def _one(self, request):
        queries = _optional(request, "QUERY")
        batch = queries.shape[0]
        images = image_count(request, self.max_images)
        encoded = [self._encode(_text(q.reshape(-1)[0]), images) for q in queries]
        if any(len(ids) == 0 for ids in encoded):
            raise ValueError("The prompt is empty after tokenization.")
        width = max(len(ids) for ids in encoded)
        input_ids = np.full((batch, width), self.pad_id, dtype=np.int32)
        for row, ids in enumerate(encoded):
            input_ids[row, : len(ids)] = ids
        lengths = np.array([[len(ids)] for ids in encoded], dtype=np.int32)
        output_len = _optional(request, "REQUEST_OUTPUT_LEN").astype(np.int32).reshape(batch, 1)
        end_id = _optional(request, "END_ID")
        pad_id = _optional(request, "PAD_ID")
        bad = _optional(request, "BAD_WORDS_DICT")
        stop = _optional(request, "STOP_WORDS_DICT")
        tensors = {
            "INPUT_ID": input_ids,
            "REQUEST_INPUT_LEN": lengths,
            "REQUEST_OUTPUT_LEN": output_len,
            "BAD_WORDS_IDS": self._word_list(bad if bad is not None else [None] * batch),
            "STOP_WORDS_IDS": self._word_list(stop if stop is not None else [None] * batch),
            "EMBEDDING_BIAS": self._embedding_bias(
                _optional(request, "EMBEDDING_BIAS_WORDS"), _optional(request, "EMBEDDING_BIAS_WEIGHTS"), batch
            ),
            "OUT_END_ID": (end_id if end_id is not None else np.full((batch, 1), self.end_id)).astype(np.int32),
            "OUT_PAD_ID": (pad_id if pad_id is not None else np.full((batch, 1), self.pad_id)).astype(np.int32),
        }
        return pb_utils.InferenceResponse([pb_utils.Tensor(k, v) for k, v in tensors.items()])

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self._one(request))
            except Exception as exc:  # reported to the client as this request's error
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
        return responses
