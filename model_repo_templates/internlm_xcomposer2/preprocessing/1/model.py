"""Tokenizer and image step (Triton Python model) of the InternLM-XComposer2 layout.

The visual engine runs here, not in a separate encoder model: `vit_plan_dir` is the path of the engine
file. A request carries one image (FP16 [3, 490, 490], CLIP-normalised) and a prompt with exactly one
image marker (`<ImageHere>`). The prompt is split at the marker; the text before it is tokenized with the
tokenizer's special tokens (BOS), the text after it without; between them go the image's fake ids
vocab_size .. vocab_size + T - 1 (T = 1225 = 35 x 35 patches of 14 pixels), and the engine's T rows become
the request's prompt table. Partial LoRA is part of the model, so every request gets a LoRA task id: the
client's `lora_task_id`, else the `lora_task_id` parameter (the task the adapter was loaded under). Releases
without `lora_prefetch_dir` (before 0.19) load nothing at start: with `lora_weights_dir` (the folder of
model.lora_weights.npy / model.lora_config.npy) the first request of this instance carries the weights, which
the LoRA cache then keeps; a client's own lora_weights / lora_config pass through.

TensorRT and PyTorch are imported only when the model is loaded on a GPU; the helpers below the imports
take plain numpy arrays and lists, so they are tested without either.
"""

import json
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from model_params import as_bool, optional_input, param, text_of  # model_repo_templates/shared/, copied here
from request_loop import answer_each
from transformers import AutoTokenizer
from word_lists import embedding_bias, word_list  # model_repo_templates/shared/, copied here

IMAGE_SHAPE = (3, 490, 490)
MSG_MARKERS = "The prompt must hold the image marker '{marker}' exactly once (where the image goes); it has {count}."
MSG_NO_IMAGE = "InternLM-XComposer2 takes exactly one image per request (image_input FP16 [3, 490, 490]); {detail}"
MSG_TABLE_ROWS = "The visual engine returned {rows} rows per image; this deployment expects {tokens} (tokens_per_image)."
MSG_ENGINE_TABLE = ("The LLM engine in {engine} has max_prompt_embedding_table_size {table} for max_batch_size {batch}: "
                    "below {tokens} rows per request; rebuild it with --max_multimodal_len {need}.")
MSG_NO_TASK = "Partial LoRA must be active on every request: send lora_task_id, or set the lora_task_id parameter."


def split_at_marker(text, marker="<ImageHere>"):
    """(before, after) the one image marker; ValueError when there is none or more than one."""
    count = text.count(marker)
    if count != 1:
        raise ValueError(MSG_MARKERS.format(marker=marker, count=count))
    before, after = text.split(marker)
    return before, after


def fake_ids(vocab_size, tokens):
    """The ids that read the prompt table: vocab_size .. vocab_size + tokens - 1."""
    return list(range(int(vocab_size), int(vocab_size) + int(tokens)))


def splice(before_ids, after_ids, vocab_size, tokens):
    """Token ids of one prompt: the text before the marker, the image's fake ids, the text after it."""
    return [*before_ids, *fake_ids(vocab_size, tokens), *after_ids]


def one_image(pixels):
    """The request's image as FP16 [1, 3, 490, 490]; ValueError for a missing, empty or misshapen one."""
    if pixels is None or pixels.size == 0:
        raise ValueError(MSG_NO_IMAGE.format(detail="this request has none."))
    array = np.asarray(pixels)
    if array.shape == IMAGE_SHAPE:
        array = array[None]
    if array.shape != (1, *IMAGE_SHAPE):
        raise ValueError(MSG_NO_IMAGE.format(detail=f"got shape {list(array.shape)}."))
    return np.ascontiguousarray(array.astype(np.float16, copy=False))


def table_rows(output, tokens):
    """The visual engine's output for one image as [tokens, hidden]; ValueError when the row count differs."""
    array = np.asarray(output)
    if array.ndim == 3:
        if array.shape[0] != 1:
            raise ValueError(MSG_NO_IMAGE.format(detail=f"the visual engine returned {array.shape[0]} images."))
        array = array[0]
    if array.ndim != 2 or array.shape[0] != int(tokens):
        raise ValueError(MSG_TABLE_ROWS.format(rows=array.shape[0] if array.ndim else 0, tokens=tokens))
    return array.astype(np.float16, copy=False)


def engine_vocab_size(engine_dir, tokens):
    """vocab_size of the LLM engine (where fake ids start), checking its prompt table fits one image."""
    config = json.loads((Path(engine_dir) / "config.json").read_text())
    build = config.get("build_config", {})
    batch = int(build.get("max_batch_size") or 1)
    table = int(build.get("max_prompt_embedding_table_size") or 0)
    if table // batch < int(tokens):
        raise ValueError(MSG_ENGINE_TABLE.format(engine=engine_dir, table=table, batch=batch, tokens=tokens,
                                                 need=batch * int(tokens)))
    return int(config["pretrained_config"]["vocab_size"])


def lora_task(client_value, default):
    """[[task id]] for the request: the client's, else the deployment's; ValueError with neither."""
    if client_value is not None and np.asarray(client_value).size:
        return np.asarray(client_value, dtype=np.uint64).reshape(1, 1)
    if default in (None, ""):
        raise ValueError(MSG_NO_TASK)
    return np.array([[int(default)]], dtype=np.uint64)


def adapter_tensors(folder):
    """(weights [1, N, D], config [1, N, 3]) of a converted adapter folder (hf_lora_convert.py's two files)."""
    weights = np.load(Path(folder) / "model.lora_weights.npy")
    config = np.load(Path(folder) / "model.lora_config.npy")
    weights = weights if weights.ndim == 3 else weights[None]
    config = config if config.ndim == 3 else config[None]
    return weights.astype(np.float16, copy=False), config.astype(np.int32, copy=False)


class VisualEngine:
    """The serialized visual engine (one input, one output), run with TensorRT on the current CUDA stream."""

    def __init__(self, plan_path):
        import tensorrt as trt  # GPU only: imported when the model loads
        import torch

        self.torch = torch
        self.stream = torch.cuda.current_stream()
        runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
        self.engine = runtime.deserialize_cuda_engine(Path(plan_path).read_bytes())
        if self.engine is None:
            raise ValueError(f"{plan_path} is not a TensorRT engine this TensorRT can load.")
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        if len(inputs) != 1 or len(outputs) != 1:
            raise ValueError(f"{plan_path}: expected one input and one output tensor, found {names}.")
        self.input_name, self.output_name = inputs[0], outputs[0]  # input/output, or input/encoder_output (0.19+)

    def __call__(self, pixels):
        torch = self.torch
        image = torch.from_numpy(pixels).to("cuda")
        self.context.set_input_shape(self.input_name, tuple(image.shape))
        self.context.set_tensor_address(self.input_name, image.data_ptr())
        out = torch.empty(tuple(self.context.get_tensor_shape(self.output_name)), dtype=torch.float16,
                          device=image.device)
        self.context.set_tensor_address(self.output_name, out.data_ptr())
        if not self.context.execute_async_v3(self.stream.cuda_stream):
            raise RuntimeError("The visual engine failed to run.")
        self.stream.synchronize()
        return out.cpu().numpy()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.add_special_tokens = as_bool(param(config, "add_special_tokens", "true"))
        self.marker = param(config, "image_marker", "<ImageHere>")
        self.tokens = int(param(config, "tokens_per_image", "1225"))
        self.default_task = param(config, "lora_task_id")
        self.lora_weights_dir = param(config, "lora_weights_dir")
        self.tokenizer = AutoTokenizer.from_pretrained(param(config, "tokenizer_dir"), trust_remote_code=True)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.end_id, self.pad_id = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        self.vocab_size = engine_vocab_size(param(config, "gpt_model_path"), self.tokens)
        self.visual = self.load_visual(param(config, "vit_plan_dir"))

    def load_visual(self, plan_path):
        """The visual engine preprocessing runs (the CPU twin's model puts its perception encoder here)."""
        return VisualEngine(plan_path)

    def encode(self, text):
        """Token ids of one prompt with the image's fake ids at its marker."""
        before, after = split_at_marker(text, self.marker)
        bos = getattr(self.tokenizer, "bos_token", None)
        first = self.add_special_tokens and not (bos and before.startswith(bos))
        before_ids = self.tokenizer.encode(before, add_special_tokens=first) if (before or first) else []
        after_ids = self.tokenizer.encode(after, add_special_tokens=False) if after else []
        return splice(before_ids, after_ids, self.vocab_size, self.tokens)

    lora_weights_dir = ""  # set by initialize; the adapter goes with the first request, once
    lora_sent = False

    def _lora_tensors(self, request):
        """The client's lora_weights / lora_config, else the adapter's on this instance's first request."""
        weights, config = optional_input(request, "LORA_WEIGHTS"), optional_input(request, "LORA_CONFIG")
        if weights is not None and config is not None:
            return {"OUT_LORA_WEIGHTS": weights, "OUT_LORA_CONFIG": config}
        if not self.lora_weights_dir or self.lora_sent:
            return {}
        weights, config = adapter_tensors(self.lora_weights_dir)
        self.lora_sent = True
        return {"OUT_LORA_WEIGHTS": weights, "OUT_LORA_CONFIG": config}

    def _one(self, request):
        queries = optional_input(request, "QUERY")
        if queries.shape[0] != 1:
            raise ValueError("Send one prompt per request (batch size 1).")
        pixels = one_image(optional_input(request, "IMAGE_INPUT"))
        table = table_rows(self.visual(pixels), self.tokens)
        ids = self.encode(text_of(queries.reshape(-1)[0]))
        input_ids = np.array([ids], dtype=np.int32)
        end_id, pad_id = optional_input(request, "END_ID"), optional_input(request, "PAD_ID")
        pad_ids = (pad_id if pad_id is not None else np.full((1, 1), self.pad_id)).astype(np.int32)
        bad, stop = optional_input(request, "BAD_WORDS_DICT"), optional_input(request, "STOP_WORDS_DICT")
        tensors = {
            "INPUT_ID": input_ids,
            "REQUEST_INPUT_LEN": np.array([[len(ids)]], dtype=np.int32),
            "DECODER_INPUT_ID": pad_ids.reshape(1, 1),
            "REQUEST_DECODER_INPUT_LEN": np.ones((1, 1), dtype=np.int32),
            "REQUEST_OUTPUT_LEN": optional_input(request, "REQUEST_OUTPUT_LEN").astype(np.int32).reshape(1, 1),
            "BAD_WORDS_IDS": word_list(self.tokenizer, bad if bad is not None else [None]),
            "STOP_WORDS_IDS": word_list(self.tokenizer, stop if stop is not None else [None]),
            "EMBEDDING_BIAS": embedding_bias(self.tokenizer, optional_input(request, "EMBEDDING_BIAS_WORDS"),
                                             optional_input(request, "EMBEDDING_BIAS_WEIGHTS"), 1, len(self.tokenizer)),
            "OUT_END_ID": (end_id if end_id is not None else np.full((1, 1), self.end_id)).astype(np.int32),
            "OUT_PAD_ID": pad_ids,
            "OUT_PROMPT_EMBEDDING_TABLE": table[None],
            "OUT_PROMPT_VOCAB_SIZE": np.array([[self.tokens]], dtype=np.int32),
            "OUT_LORA_TASK_ID": lora_task(optional_input(request, "LORA_TASK_ID"), self.default_task),
        }
        tensors.update(self._lora_tensors(request))
        extra_id = optional_input(request, "PROMPT_TABLE_EXTRA_ID")
        if extra_id is not None:
            tensors["OUT_PROMPT_TABLE_EXTRA_IDS"] = np.where(
                input_ids >= self.vocab_size, extra_id.astype(np.uint64).reshape(1, 1), 0).astype(np.uint64)
        return pb_utils.InferenceResponse([pb_utils.Tensor(k, v) for k, v in tensors.items()])

    def execute(self, requests):
        return answer_each(requests, self._one)
