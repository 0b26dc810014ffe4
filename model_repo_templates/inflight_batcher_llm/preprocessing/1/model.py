"""Tokenizer step (Triton Python model) of the text and the multimodal layouts.

In the multimodal layout (`max_num_images` set) a request may carry images; each image marker in the
text, or the start of the prompt when there is none, becomes that image's fake token ids
vocab_size + k*T .. vocab_size + (k+1)*T - 1, which tensorrt_llm reads from the prompt table. T, the
tokens per image, is max_prompt_embedding_table_size // max_batch_size // max_num_images of the
engine's config.json, as in the TensorRT-LLM backend.

As upstream: special tokens are added unless `add_special_tokens` is false (but never a second BOS
before a prompt that starts with one, as chat-templated prompts do); `decoder_text_input` becomes
the decoder ids of encoder-decoder engines (the pad id alone without it); `prompt_table_extra_id`
marks every fake id of the request with that id, so KV blocks of the same image can be reused.
With `pre_prompt` / `post_prompt` set (multimodal layout), every prompt is wrapped in them, as upstream's
preprocessing does per family, for clients that send the bare question.

BLIP-2 (a visual engine whose model_type names blip2): an image at the very start of the prompt goes before the
BOS, [image ids, BOS, text], as upstream's preprocessing (v0.12.0 lines 418-422, v0.19.0 620-624: the fake ids,
then the query encoded with its special tokens), TensorRT-LLM's setup_fake_prompts and Hugging Face's Blip2 put
it. Other families keep the BOS first.
"""

import json
from pathlib import Path

import numpy as np
import tokenizer_only  # noqa: F401  model_repo_templates/shared/, copied here: no PyTorch
import triton_python_backend_utils as pb_utils
from fast_tokenizer import load_tokenizer  # model_repo_templates/shared/, copied here
from model_params import as_bool, optional_input, param, text_of  # model_repo_templates/shared/, copied here
from request_loop import answer_each
from word_lists import embedding_bias, word_list  # model_repo_templates/shared/, copied here

IMAGE_INPUTS = {"IMAGE_INPUT": "image_input", "IMAGE_BYTES": "image_bytes_input", "IMAGE_URL": "image_url_input",
                "VIDEO_BYTES": "video_bytes_input"}


def image_count(request, max_images):
    """Images in this request (0 without any); ValueError for mixed kinds or too many images."""
    present = []
    for name in IMAGE_INPUTS:
        value = optional_input(request, name)
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


def visual_model_type(multimodal_model_path):
    """builder_config.model_type of the visual engine folder's config.json ("" when there is none to read)."""
    try:
        config = json.loads((Path(multimodal_model_path) / "config.json").read_text())
    except (OSError, ValueError, TypeError):
        return ""
    return str(config.get("builder_config", {}).get("model_type") or "")


def extra_ids(input_ids, extra_id, vocab_size):
    """Per token: the request's prompt-table extra id on fake (image) ids, 0 on text ids."""
    return np.where(input_ids >= vocab_size, extra_id.astype(np.uint64), 0).astype(np.uint64)


class TritonPythonModel:
    images_before_bos = False  # BLIP-2: a leading image goes before the BOS

    def initialize(self, args):
        config = json.loads(args["model_config"])
        tokenizer_dir = param(config, "tokenizer_dir")
        self.add_special_tokens = as_bool(param(config, "add_special_tokens", "true"))
        self.tokenizer = load_tokenizer(tokenizer_dir, padding_side="left")
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.end_id = self.tokenizer.eos_token_id
        self.pad_id = self.tokenizer.pad_token_id
        self.vocab_size = len(self.tokenizer)
        self.fake_base = self.vocab_size  # the engine's vocab size once images are possible
        self.max_images = int(param(config, "max_num_images", "0") or 0)
        self.marker = param(config, "image_marker", "<image>") or "<image>"
        # the family's server-side wrapping (upstream v0.19 preprocessing: llava, vila, llava_onevision)
        self.pre_prompt, self.post_prompt = param(config, "pre_prompt"), param(config, "post_prompt")
        if self.max_images:
            self.fake_base, self.image_tokens = tokens_per_image(param(config, "gpt_model_path"), self.max_images)
            self.images_before_bos = "blip2" in visual_model_type(param(config, "multimodal_model_path"))

    def _special_tokens(self, text):
        """Whether to add special tokens to this prompt: not when it already starts with the BOS text."""
        bos = getattr(self.tokenizer, "bos_token", None)
        return self.add_special_tokens and not (bos and text.startswith(bos))

    def _encode(self, text, images):
        """Token ids of one prompt, wrapped in the family's pre/post prompt when set, with each image's
        fake ids at its marker (or, when there is none, right after the pre-prompt)."""
        if images == 0:
            text = self.pre_prompt + text + self.post_prompt
            return self.tokenizer.encode(text, add_special_tokens=self._special_tokens(text))
        markers = text.count(self.marker)
        if markers == 0:
            text = self.marker * images + text
        elif markers != images:
            raise ValueError(f"The prompt has {markers} image marker(s) '{self.marker}' for {images} image(s); "
                             "put one marker where each image goes, or none.")
        text = self.pre_prompt + text + self.post_prompt
        pieces = text.split(self.marker)
        special = self._special_tokens(text)
        # the piece that gets the special tokens (BOS): the first, or for BLIP-2 the text after a leading image
        bos_piece = 1 if self.images_before_bos and pieces[0] == "" else 0
        ids = []
        for index, piece in enumerate(pieces):
            if index:
                start = self.fake_base + (index - 1) * self.image_tokens
                ids += range(start, start + self.image_tokens)
            first = index == bos_piece and special
            if piece or first:
                ids += self.tokenizer.encode(piece, add_special_tokens=first)
        return ids

    def _decoder_ids(self, request, batch, pad_ids):
        """(DECODER_INPUT_ID, REQUEST_DECODER_INPUT_LEN): the decoder query's ids, or the pad id alone."""
        queries = optional_input(request, "DECODER_QUERY")
        if queries is None:
            return pad_ids.reshape(batch, 1).astype(np.int32), np.ones((batch, 1), dtype=np.int32)
        encoded = [self.tokenizer.encode(text_of(q.reshape(-1)[0]), add_special_tokens=self.add_special_tokens)
                   for q in queries]
        ids = np.full((batch, max([1, *map(len, encoded)])), self.pad_id, dtype=np.int32)
        for row, row_ids in enumerate(encoded):
            ids[row, : len(row_ids)] = row_ids
        return ids, np.array([[max(1, len(r))] for r in encoded], dtype=np.int32)

    def _one(self, request):
        queries = optional_input(request, "QUERY")
        batch = queries.shape[0]
        images = image_count(request, self.max_images)
        encoded = [self._encode(text_of(q.reshape(-1)[0]), images) for q in queries]
        if any(len(ids) == 0 for ids in encoded):
            raise ValueError("The prompt is empty after tokenization.")
        width = max(len(ids) for ids in encoded)
        input_ids = np.full((batch, width), self.pad_id, dtype=np.int32)
        for row, ids in enumerate(encoded):
            input_ids[row, : len(ids)] = ids
        lengths = np.array([[len(ids)] for ids in encoded], dtype=np.int32)
        output_len = optional_input(request, "REQUEST_OUTPUT_LEN").astype(np.int32).reshape(batch, 1)
        end_id = optional_input(request, "END_ID")
        pad_id = optional_input(request, "PAD_ID")
        bad = optional_input(request, "BAD_WORDS_DICT")
        stop = optional_input(request, "STOP_WORDS_DICT")
        pad_ids = (pad_id if pad_id is not None else np.full((batch, 1), self.pad_id)).astype(np.int32)
        decoder_ids, decoder_lengths = self._decoder_ids(request, batch, pad_ids)
        tensors = {
            "INPUT_ID": input_ids,
            "REQUEST_INPUT_LEN": lengths,
            "DECODER_INPUT_ID": decoder_ids,
            "REQUEST_DECODER_INPUT_LEN": decoder_lengths,
            "REQUEST_OUTPUT_LEN": output_len,
            "BAD_WORDS_IDS": word_list(self.tokenizer, bad if bad is not None else [None] * batch),
            "STOP_WORDS_IDS": word_list(self.tokenizer, stop if stop is not None else [None] * batch),
            "EMBEDDING_BIAS": embedding_bias(self.tokenizer, optional_input(request, "EMBEDDING_BIAS_WORDS"),
                                             optional_input(request, "EMBEDDING_BIAS_WEIGHTS"), batch, self.vocab_size),
            "OUT_END_ID": (end_id if end_id is not None else np.full((batch, 1), self.end_id)).astype(np.int32),
            "OUT_PAD_ID": pad_ids,
        }
        extra_id = optional_input(request, "PROMPT_TABLE_EXTRA_ID")
        if extra_id is not None:
            tensors["OUT_PROMPT_TABLE_EXTRA_IDS"] = extra_ids(input_ids, extra_id.reshape(batch, 1), self.fake_base)
        return pb_utils.InferenceResponse([pb_utils.Tensor(k, v) for k, v in tensors.items()])

    def execute(self, requests):
        return answer_each(requests, self._one)
