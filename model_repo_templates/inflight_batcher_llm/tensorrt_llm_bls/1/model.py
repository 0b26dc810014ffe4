"""Business-logic model: preprocessing -> tensorrt_llm -> postprocessing, one thread per request.

In the multimodal layout (`multimodal_encoders_name` set) a request with `image_input` also goes
through the encoder model, whose prompt-table rows and vocab size reach tensorrt_llm together with
the fake ids preprocessing puts where the images are. One kind of image input per request.

With accumulate_tokens (the default here) every streamed response carries the full text so far,
which is the one way to stream text that never loses spaces or splits characters, whatever the
tokenizer. Text stop words are checked on the decoded text. A cancelled client request is passed
on to tensorrt_llm as a `stop` request with the same request id, so the engine frees its slot.
"""

import json
import threading
import uuid

import numpy as np
import triton_python_backend_utils as pb_utils

# ensemble-style input name -> tensorrt_llm input name (sampling and control tensors passed through)
DIRECT = {
    "num_return_sequences": "num_return_sequences",
    "exclude_input_in_output": "exclude_input_in_output",
    "top_k": "runtime_top_k",
    "top_p": "runtime_top_p",
    "temperature": "temperature",
    "length_penalty": "len_penalty",
    "repetition_penalty": "repetition_penalty",
    "min_length": "min_length",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "random_seed": "random_seed",
    "return_log_probs": "return_log_probs",
    "return_context_logits": "return_context_logits",
    "return_generation_logits": "return_generation_logits",
    "return_perf_metrics": "return_perf_metrics",
    "beam_width": "beam_width",
    "stream": "streaming",
    "prompt_embedding_table": "prompt_embedding_table",
    "prompt_vocab_size": "prompt_vocab_size",
    "lora_task_id": "lora_task_id",
    "lora_weights": "lora_weights",
    "lora_config": "lora_config",
    "guided_decoding_guide_type": "guided_decoding_guide_type",
    "guided_decoding_guide": "guided_decoding_guide",
}
PREPROCESS = {
    "text_input": "QUERY",
    "max_tokens": "REQUEST_OUTPUT_LEN",
    "bad_words": "BAD_WORDS_DICT",
    "stop_words": "STOP_WORDS_DICT",
    "embedding_bias_words": "EMBEDDING_BIAS_WORDS",
    "embedding_bias_weights": "EMBEDDING_BIAS_WEIGHTS",
    "end_id": "END_ID",
    "pad_id": "PAD_ID",
}
# BLS image input -> preprocessing input (preprocessing counts images and places their fake ids)
IMAGE_INPUTS = {"image_input": "IMAGE_INPUT", "image_bytes_input": "IMAGE_BYTES", "image_url_input": "IMAGE_URL"}
FROM_PREPROCESS = {
    "INPUT_ID": "input_ids",
    "REQUEST_INPUT_LEN": "input_lengths",
    "REQUEST_OUTPUT_LEN": "request_output_len",
    "BAD_WORDS_IDS": "bad_words_list",
    "STOP_WORDS_IDS": "stop_words_list",
    "EMBEDDING_BIAS": "embedding_bias",
    "OUT_END_ID": "end_id",
    "OUT_PAD_ID": "pad_id",
}
PASSTHROUGH = {
    "cum_log_probs": "CUM_LOG_PROBS",
    "output_log_probs": "OUTPUT_LOG_PROBS",
    "context_logits": "CONTEXT_LOGITS",
    "generation_logits": "GENERATION_LOGITS",
    "batch_index": "BATCH_INDEX",
    "sequence_index": "SEQUENCE_INDEX",
}


def _param(config, key, default=""):
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if (not value or value.startswith("${")) else value


def _get(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(text))


class _Stopped(Exception):
    pass


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.accumulate = _param(config, "accumulate_tokens", "false").lower() in ("true", "1")
        self.llm_name = _param(config, "tensorrt_llm_model_name", "tensorrt_llm")
        self.draft_name = _param(config, "tensorrt_llm_draft_model_name")
        self.encoders_name = _param(config, "multimodal_encoders_name")
        # the release's names for renamed engine inputs (random_seed -> seed, min_length -> min_tokens from 0.20)
        self.engine_names = json.loads(_param(config, "engine_input_names", "{}"))
        if self.draft_name:
            raise pb_utils.TritonModelException("Speculative decoding is not supported by this BLS template.")

    def execute(self, requests):
        if not self.decoupled:
            return [self._run(request, None) for request in requests]
        for request in requests:
            sender = request.get_response_sender()
            threading.Thread(target=self._run, args=(request, sender), daemon=True).start()
        return None

    # ---- one request ------------------------------------------------------------------------
    def _run(self, request, sender):
        try:
            response = self._generate(request, sender)
        except _Stopped:
            response = None
        except Exception as exc:
            response = _error(str(exc))
        if sender is None:
            return response
        try:
            if response is None:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception:
            pass  # client already gone
        return None

    def _images(self, request):
        """{input name: array} of the image inputs this request carries (at most one kind)."""
        images = {}
        for name in IMAGE_INPUTS:
            value = _get(request, name)
            if value is not None and value.size:
                images[name] = value
        if len(images) > 1:
            raise ValueError(f"Send one kind of image input per request; this request has {' and '.join(images)}.")
        if images and not self.encoders_name:
            raise ValueError("This deployment is text-only: it takes no images.")
        if images and _get(request, "prompt_embedding_table") is not None:
            raise ValueError("Send either images or a prompt_embedding_table, not both.")
        return images

    def _encode_images(self, images, max_tokens):
        """Prompt-table rows for image_input from the multimodal_encoders model ({} for other kinds)."""
        pixels = images.get("image_input")
        if pixels is None:
            return {}
        result = pb_utils.InferenceRequest(
            model_name=self.encoders_name,
            inputs=[pb_utils.Tensor("IMAGE", pixels.astype(np.float16, copy=False)),
                    pb_utils.Tensor("max_tokens", max_tokens.astype(np.int32).reshape(-1, 1))],
            requested_output_names=["OUT_PROMPT_EMBEDDING_TABLE", "OUT_PROMPT_VOCAB_SIZE"],
        ).exec()
        if result.has_error():
            raise ValueError(result.error().message())
        return {
            "prompt_embedding_table": pb_utils.get_output_tensor_by_name(result, "OUT_PROMPT_EMBEDDING_TABLE").as_numpy(),
            "prompt_vocab_size": pb_utils.get_output_tensor_by_name(result, "OUT_PROMPT_VOCAB_SIZE").as_numpy(),
        }

    def _preprocess(self, request, images=None):
        inputs = [pb_utils.Tensor(IMAGE_INPUTS[name], value) for name, value in (images or {}).items()]
        for name, target in PREPROCESS.items():
            value = _get(request, name)
            if value is not None:
                inputs.append(pb_utils.Tensor(target, value))
        max_tokens = _get(request, "max_tokens")
        if max_tokens is None or max_tokens.size != 1 or int(max_tokens.reshape(-1)[0]) <= 0:
            raise ValueError("max_tokens must be a single value greater than 0.")
        result = pb_utils.InferenceRequest(
            model_name="preprocessing", inputs=inputs, requested_output_names=list(FROM_PREPROCESS)
        ).exec()
        if result.has_error():
            raise ValueError(result.error().message())
        return {
            FROM_PREPROCESS[name]: pb_utils.get_output_tensor_by_name(result, name).as_numpy()
            for name in FROM_PREPROCESS
        }

    def _decode(self, tokens):
        ids = np.array(tokens, dtype=np.int32).reshape(1, 1, -1)
        result = pb_utils.InferenceRequest(
            model_name="postprocessing",
            inputs=[pb_utils.Tensor("TOKENS_BATCH", ids),
                    pb_utils.Tensor("SEQUENCE_LENGTH", np.array([[ids.shape[-1]]], dtype=np.int32))],
            requested_output_names=["OUTPUT"],
        ).exec()
        if result.has_error():
            raise ValueError(result.error().message())
        return pb_utils.get_output_tensor_by_name(result, "OUTPUT").as_numpy().reshape(-1)[0]

    def _stop_engine(self, request_id):
        stop = pb_utils.InferenceRequest(
            model_name=self.llm_name,
            inputs=[pb_utils.Tensor("input_ids", np.zeros((1, 1), dtype=np.int32)),
                    pb_utils.Tensor("input_lengths", np.zeros((1, 1), dtype=np.int32)),
                    pb_utils.Tensor("request_output_len", np.zeros((1, 1), dtype=np.int32)),
                    pb_utils.Tensor("stop", np.ones((1, 1), dtype=bool))],
            requested_output_names=["output_ids"],
            request_id=request_id,
        )
        for _ in stop.exec(decoupled=True):
            pass

    def _response(self, text, extras):
        tensors = [pb_utils.Tensor("text_output", np.array([text], dtype=object))]
        tensors += [pb_utils.Tensor(name, value) for name, value in extras.items()]
        return pb_utils.InferenceResponse(tensors)

    def _generate(self, request, sender):
        stream = _get(request, "stream")
        streaming = bool(stream.reshape(-1)[0]) if stream is not None else False
        if streaming and not self.decoupled:
            raise ValueError("Streaming is only supported if model is deployed using decoupled mode.")
        raw_stops = _get(request, "stop_words")
        stop_words = [] if raw_stops is None else [
            w.decode("utf-8", "replace") if isinstance(w, bytes) else str(w) for w in raw_stops.reshape(-1) if w
        ]
        images = self._images(request)
        llm_inputs = self._preprocess(request, images)
        for name, target in DIRECT.items():
            value = _get(request, name)
            if value is not None:
                llm_inputs[self.engine_names.get(target, target)] = value
        if images:
            llm_inputs.update(self._encode_images(images, _get(request, "max_tokens")))
        request_id = f"bls-{uuid.uuid4().hex}"
        llm_request = pb_utils.InferenceRequest(
            model_name=self.llm_name,
            inputs=[pb_utils.Tensor(k, v) for k, v in llm_inputs.items()],
            requested_output_names=["output_ids", "sequence_length", *PASSTHROUGH],
            request_id=request_id,
        )
        tokens, sent_text, extras, stopped = [], b"", {}, False
        results = llm_request.exec(decoupled=True) if self.decoupled else [llm_request.exec()]
        for result in results:
            if sender is not None and sender.is_cancelled():
                if not stopped:
                    self._stop_engine(request_id)
                    stopped = True
                continue
            if result.has_error():
                raise ValueError(result.error().message())
            out = pb_utils.get_output_tensor_by_name(result, "output_ids")
            if out is None or stopped:
                continue  # the empty final response
            length = int(pb_utils.get_output_tensor_by_name(result, "sequence_length").as_numpy().reshape(-1)[0])
            new = out.as_numpy().reshape(-1)[:length].tolist()
            tokens += new
            for name in PASSTHROUGH:
                tensor = pb_utils.get_output_tensor_by_name(result, name)
                if tensor is not None:
                    extras[name] = tensor.as_numpy()
            if not streaming:
                continue
            text = self._decode(tokens) if self.accumulate else self._decode(new)
            full = text if self.accumulate else sent_text + text
            cut = self._cut_at_stop(full, stop_words)
            if cut is not None:
                full = cut
                self._stop_engine(request_id)
                stopped = True
            chunk = full if self.accumulate else full[len(sent_text):]
            sent_text = full
            if chunk or self.accumulate:
                sender.send(self._response(chunk, extras))
        if stopped and sender is not None and sender.is_cancelled():
            raise _Stopped()
        if streaming:
            return None
        text = self._decode(tokens)
        cut = self._cut_at_stop(text, stop_words)
        return self._response(cut if cut is not None else text, extras)

    @staticmethod
    def _cut_at_stop(text, stop_words):
        """Text up to the first stop word, or None when no stop word occurs."""
        positions = [text.find(w.encode("utf-8")) for w in stop_words]
        positions = [p for p in positions if p >= 0]
        return text[: min(positions)] if positions else None
