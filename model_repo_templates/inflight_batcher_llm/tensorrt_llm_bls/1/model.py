"""Business-logic model: preprocessing -> tensorrt_llm -> postprocessing, one thread per request.

In the multimodal layout (`multimodal_encoders_name` set) a request with `image_input` also goes
through the encoder model, whose prompt-table rows and vocab size reach tensorrt_llm together with
the fake ids preprocessing puts where the images are; the encoder and preprocessing run side by side,
as the ensemble runs them. One kind of image input per request. In the InternLM-XComposer2
layout (`vision_in_preprocessing` true) preprocessing takes the image itself and returns the table and the
Partial-LoRA task id with the ids.

Each returned sequence (`num_return_sequences`) is its own stream of responses, told apart by
`sequence_index`, as from tensorrt_llm. Streamed text is always valid UTF-8: deltas hold back a
character whose bytes are not all generated yet; with accumulate_tokens every response carries the
full text so far. Text stop words are checked on the decoded completion (never on an echoed prompt)
and the text is kept up to and including the stop word, as tensorrt_llm's own stop words leave it.
A cancelled client request is passed on to tensorrt_llm as a `stop` request with the same request
id, so the engine frees its slot.
"""

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import triton_python_backend_utils as pb_utils
from gil_safe import CancelPoll, FinishedStreams, requested_only

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
    "decoder_text_input": "DECODER_QUERY",
    "max_tokens": "REQUEST_OUTPUT_LEN",
    "bad_words": "BAD_WORDS_DICT",
    "stop_words": "STOP_WORDS_DICT",
    "embedding_bias_words": "EMBEDDING_BIAS_WORDS",
    "embedding_bias_weights": "EMBEDDING_BIAS_WEIGHTS",
    "end_id": "END_ID",
    "pad_id": "PAD_ID",
    "prompt_table_extra_id": "PROMPT_TABLE_EXTRA_ID",
}
# client LoRA inputs -> preprocessing inputs, where preprocessing sets the request's LoRA task itself
# (vision_in_preprocessing: it puts the Partial-LoRA task on every request and passes the client's through)
LORA_TO_PREPROCESS = {"lora_task_id": "LORA_TASK_ID", "lora_weights": "LORA_WEIGHTS", "lora_config": "LORA_CONFIG"}
# BLS image input -> preprocessing input (preprocessing counts images and places their fake ids)
IMAGE_INPUTS = {"image_input": "IMAGE_INPUT", "image_bytes_input": "IMAGE_BYTES", "image_url_input": "IMAGE_URL",
                "video_bytes_input": "VIDEO_BYTES"}
FROM_PREPROCESS = {
    "INPUT_ID": "input_ids",
    "REQUEST_INPUT_LEN": "input_lengths",
    "DECODER_INPUT_ID": "decoder_input_ids",
    "REQUEST_DECODER_INPUT_LEN": "decoder_input_lengths",
    "REQUEST_OUTPUT_LEN": "request_output_len",
    "BAD_WORDS_IDS": "bad_words_list",
    "STOP_WORDS_IDS": "stop_words_list",
    "EMBEDDING_BIAS": "embedding_bias",
    "OUT_END_ID": "end_id",
    "OUT_PAD_ID": "pad_id",
    "OUT_PROMPT_TABLE_EXTRA_IDS": "prompt_table_extra_ids",
}
# preprocessing outputs of layouts whose preprocessing runs the visual engine itself (vision_in_preprocessing)
FROM_VISION_PREPROCESS = {
    "OUT_PROMPT_EMBEDDING_TABLE": "prompt_embedding_table",
    "OUT_PROMPT_VOCAB_SIZE": "prompt_vocab_size",
    "OUT_LORA_TASK_ID": "lora_task_id",
    "OUT_LORA_WEIGHTS": "lora_weights",  # the first request only (releases without lora_prefetch_dir)
    "OUT_LORA_CONFIG": "lora_config",
}
# tensorrt_llm outputs returned as they are (the perf metrics only when return_perf_metrics asks for them)
PASSTHROUGH = (
    "cum_log_probs", "output_log_probs", "context_logits", "generation_logits", "batch_index", "sequence_index",
    "kv_cache_alloc_new_blocks", "kv_cache_reused_blocks", "kv_cache_alloc_total_blocks", "arrival_time_ns",
    "first_scheduled_time_ns", "first_token_time_ns", "last_token_time_ns", "acceptance_rate",
    "total_accepted_draft_tokens", "total_draft_tokens",
)
INCOMPLETE = "\ufffd"  # what a character decodes to while some of its bytes are still to come


def _param(config, key, default=""):
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if (not value or value.startswith("${")) else value


def _get(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _flag(value, default):
    return default if value is None or not value.size else bool(value.reshape(-1)[0])


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(text))


class _Stopped(Exception):
    pass


def stop_end(text, stop_words, start=0):
    """End of the earliest stop word found in text[start:] (the text is kept up to it), or None."""
    found = [(p, p + len(w)) for w in stop_words if w and (p := text.find(w, start)) >= 0]
    return min(found)[1] if found else None


def stable_text(text, final):
    """The part of decoded text that later tokens cannot change: all of it at the end of a sequence,
    else without a trailing character whose remaining bytes have not been generated yet."""
    return text if final else text.rstrip(INCOMPLETE)


def rows_of(output_ids, sequence_length):
    """Token lists, one per beam, from one tensorrt_llm response."""
    ids = output_ids.reshape(-1, output_ids.shape[-1])
    lengths = sequence_length.reshape(-1)
    return [ids[beam, : int(lengths[beam])].tolist() for beam in range(ids.shape[0])]


class Sequence:
    """One returned sequence (its `sequence_index`): tokens per beam, the text sent so far, where the
    completion starts in the decoded text (after an echoed prompt), whether a stop word ended it."""

    def __init__(self, prompt_chars=0):
        self.beams = []
        self.sent = ""
        self.prompt_chars = prompt_chars
        self.stopped = False

    def add(self, rows, streaming):
        """Streamed single-beam responses carry new tokens; beam search and final responses carry all."""
        if streaming and len(rows) == 1 and self.beams and len(self.beams) == 1:
            self.beams = [self.beams[0] + rows[0]]
        else:
            self.beams = rows

    def texts(self, decoded, stop_words, final):
        """Texts to send (one per beam) from the decoded beams; marks the sequence stopped at a stop word."""
        if len(decoded) != 1:
            return decoded  # beam search: the engine applies stop words; every beam is full text
        text = stable_text(decoded[0], final)
        end = stop_end(text, stop_words, self.prompt_chars)
        if end is not None:
            text, self.stopped = text[:end], True
        return [text]

    def chunk(self, texts, accumulate):
        """What one streamed response carries: the full text, or what was not sent yet."""
        if len(texts) != 1:
            return texts
        delta = texts[0][len(self.sent):]
        self.sent = texts[0]
        return texts if accumulate else [delta]


class TritonPythonModel:
    vision_in_preprocessing = False  # set by initialize from the config

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.accumulate = _param(config, "accumulate_tokens", "false").lower() in ("true", "1")
        self.exclude_input = _param(config, "exclude_input_in_output", "false").lower() in ("true", "1")
        self.llm_name = _param(config, "tensorrt_llm_model_name", "tensorrt_llm")
        self.draft_name = _param(config, "tensorrt_llm_draft_model_name")
        self.encoders_name = _param(config, "multimodal_encoders_name")
        # InternLM-XComposer2 layout: preprocessing takes the image and returns the prompt table itself
        self.vision_in_preprocessing = _param(config, "vision_in_preprocessing", "false").lower() in ("true", "1")
        # the release's names for renamed engine inputs (random_seed -> seed, min_length -> min_tokens from 0.20)
        self.engine_names = json.loads(_param(config, "engine_input_names", "{}"))
        if self.draft_name:
            raise pb_utils.TritonModelException("Speculative decoding is not supported by this BLS template.")
        self.side_calls = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bls-encoder")
        self.finished_streams = FinishedStreams()  # decoupled BLS iterators: gil_safe.py says why

    def finalize(self):
        self.side_calls.shutdown(wait=True)
        self.finished_streams.release_all()

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
        if images and not (self.encoders_name or self.vision_in_preprocessing):
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
        for name, target in {**PREPROCESS, **(LORA_TO_PREPROCESS if self.vision_in_preprocessing else {})}.items():
            value = _get(request, name)
            if value is not None:
                inputs.append(pb_utils.Tensor(target, value))
        max_tokens = _get(request, "max_tokens")
        if max_tokens is None or max_tokens.size != 1 or int(max_tokens.reshape(-1)[0]) <= 0:
            raise ValueError("max_tokens must be a single value greater than 0.")
        wanted = {**FROM_PREPROCESS, **(FROM_VISION_PREPROCESS if self.vision_in_preprocessing else {})}
        result = pb_utils.InferenceRequest(
            model_name="preprocessing", inputs=inputs, requested_output_names=list(wanted)
        ).exec()
        if result.has_error():
            raise ValueError(result.error().message())
        outputs = {}
        for name, target in wanted.items():
            tensor = pb_utils.get_output_tensor_by_name(result, name)
            if tensor is not None:  # OUT_PROMPT_TABLE_EXTRA_IDS only when an extra id was sent
                outputs[target] = tensor.as_numpy()
        return outputs

    def _decode(self, beams):
        """Text of each beam's tokens (postprocessing's OUTPUT, one entry per beam)."""
        width = max([1, *map(len, beams)])
        ids = np.zeros((1, len(beams), width), dtype=np.int32)
        for row, tokens in enumerate(beams):
            ids[0, row, : len(tokens)] = tokens
        lengths = np.array([[len(b) for b in beams]], dtype=np.int32)
        result = pb_utils.InferenceRequest(
            model_name="postprocessing",
            inputs=[pb_utils.Tensor("TOKENS_BATCH", ids), pb_utils.Tensor("SEQUENCE_LENGTH", lengths)],
            requested_output_names=["OUTPUT"],
        ).exec()
        if result.has_error():
            raise ValueError(result.error().message())
        texts = pb_utils.get_output_tensor_by_name(result, "OUTPUT").as_numpy().reshape(-1)
        return [t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t) for t in texts]

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
        responses = stop.exec(decoupled=True)
        for _ in responses:
            pass
        self.finished_streams.keep(responses)

    @staticmethod
    def _response(request, texts, extras):
        """Only the outputs the client asked for: the stub would drop the others without the GIL (gil_safe.py)."""
        outputs = requested_only(request, {"text_output": np.array([[t.encode("utf-8") for t in texts]], dtype=object),
                                           **extras})
        return pb_utils.InferenceResponse([pb_utils.Tensor(name, value) for name, value in outputs.items()])

    def _engine_request(self, request, images, request_id):
        encoded = None
        if images and not self.vision_in_preprocessing:
            encoded = self.side_calls.submit(self._encode_images, images, _get(request, "max_tokens"))
        try:
            llm_inputs = self._preprocess(request, images)
        except Exception:
            if encoded is not None:
                encoded.exception()  # wait for the encoder; preprocessing's message is the one the client gets
            raise
        table = encoded.result() if encoded is not None else {}
        for name, target in DIRECT.items():
            value = _get(request, name)
            if value is not None:
                llm_inputs[self.engine_names.get(target, target)] = value
        llm_inputs.update(table)
        return llm_inputs, pb_utils.InferenceRequest(
            model_name=self.llm_name,
            inputs=[pb_utils.Tensor(k, v) for k, v in llm_inputs.items()],
            requested_output_names=["output_ids", "sequence_length", *_passthrough_wanted(request)],
            request_id=request_id,
        )

    def _generate(self, request, sender):
        streaming = _flag(_get(request, "stream"), False)
        if streaming and not self.decoupled:
            raise ValueError("Streaming is only supported if model is deployed using decoupled mode.")
        count = _get(request, "num_return_sequences")
        if count is not None and count.size and int(count.reshape(-1)[0]) > 1 and not self.decoupled:
            raise ValueError("num_return_sequences above 1 needs decoupled_mode: true (one response per sequence).")
        raw_stops = _get(request, "stop_words")
        stop_words = [] if raw_stops is None else [
            w.decode("utf-8", "replace") if isinstance(w, bytes) else str(w) for w in raw_stops.reshape(-1) if w
        ]
        request_id = f"bls-{uuid.uuid4().hex}"
        llm_inputs, llm_request = self._engine_request(request, self._images(request), request_id)
        # a non-streamed output starts with the prompt unless exclude_input_in_output says otherwise
        echoed = not streaming and not _flag(_get(request, "exclude_input_in_output"), self.exclude_input)
        prompt_chars = 0
        if echoed and stop_words:
            prompt_ids = llm_inputs["input_ids"].reshape(-1)[: int(llm_inputs["input_lengths"].reshape(-1)[0])]
            prompt_chars = len(self._decode([prompt_ids.tolist()])[0])
        results = llm_request.exec(decoupled=True) if self.decoupled else [llm_request.exec()]
        try:
            return self._read_results(request, results, sender, streaming, request_id, prompt_chars, stop_words, count)
        finally:
            if self.decoupled:
                self.finished_streams.keep(results)

    def _read_results(self, request, results, sender, streaming, request_id, prompt_chars, stop_words, count):
        """The engine's responses of one request, as text responses to the client (the last one returned)."""
        sequences, finished, stopped = {}, [], False
        cancelled = CancelPoll(sender)  # asked at most every 0.1 s, not per token (gil_safe.py says why)
        for result in results:
            if cancelled():
                if not stopped:
                    self._stop_engine(request_id)
                    stopped = True
                continue
            if result.has_error():
                raise ValueError(result.error().message())
            out = pb_utils.get_output_tensor_by_name(result, "output_ids")
            if out is None or stopped:
                continue  # the empty final response
            extras = {n: t.as_numpy() for n in PASSTHROUGH if (t := pb_utils.get_output_tensor_by_name(result, n))}
            index = int(extras["sequence_index"].reshape(-1)[0]) if "sequence_index" in extras else 0
            sequence = sequences.setdefault(index, Sequence(prompt_chars))
            if sequence.stopped:
                continue
            rows = rows_of(out.as_numpy(), pb_utils.get_output_tensor_by_name(result, "sequence_length").as_numpy())
            sequence.add(rows, streaming)
            if not streaming:
                finished.append((sequence, extras))
                continue
            texts = sequence.texts(self._decode(sequence.beams), stop_words, final=False)
            chunk = sequence.chunk(texts, self.accumulate)
            if any(chunk) or self.accumulate:
                sender.send(self._response(request, chunk, extras))
            if sequence.stopped and all(s.stopped for s in sequences.values()) and len(sequences) >= _count(count):
                self._stop_engine(request_id)
                stopped = True
        if stopped and sender is not None and sender.is_cancelled():
            raise _Stopped()
        if streaming:
            return self._flush(request, sequences, stop_words, sender)
        responses = [self._response(request, s.texts(self._decode(s.beams), stop_words, final=True), extras)
                     for s, extras in finished]
        for response in responses[:-1]:
            sender.send(response)
        return responses[-1] if responses else None

    def _flush(self, request, sequences, stop_words, sender):
        """The end of each streamed sequence: characters held back while incomplete (U+FFFD if they stay so)."""
        for sequence in sequences.values():
            if sequence.stopped or len(sequence.beams) != 1:
                continue
            texts = sequence.texts(self._decode(sequence.beams), stop_words, final=True)
            if texts[0] != sequence.sent:
                sender.send(self._response(request, sequence.chunk(texts, self.accumulate), {}))
        return None


def _passthrough_wanted(request):
    """The engine outputs to ask for: sequence_index (which stream a response is) and those the client asked for
    (every one when it named none). Each output asked for is built and copied for every streamed token."""
    return ["sequence_index", *(n for n in requested_only(request, dict.fromkeys(PASSTHROUGH)) if n != "sequence_index")]


def _count(tensor):
    return 1 if tensor is None or not tensor.size else max(1, int(tensor.reshape(-1)[0]))
