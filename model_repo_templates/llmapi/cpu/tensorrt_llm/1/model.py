"""CPU stand-in for Triton's `llmapi` model (TensorRT-LLM 1.x, PyTorch backend) behind the same config.pbtxt.

It reads 1/model.yaml as upstream does (every key but triton_config are LLM API arguments; the ones the
CPU can honour are used), takes the llmapi inputs (`text_input`, `sampling_param_*`, `streaming`, `stop`,
`lora_id`/`lora_name`/`lora_path`, `image_url`) and answers with its outputs (`text_output` holding all
text so far, `finish_reason`, `stop_reason`, `cumulative_logprob`, KV-cache and timing figures), with
upstream's error texts where upstream has them. Generation runs on the CPU engine core shared with the
engine-path stand-in (cpu_runtime/engine: in-flight batching, KV blocks, LoRA rows); adapters are PEFT folders
read from lora_path and kept in the core's LRU cache by lora_id; images are `data:` URIs described by the
CPU image encoder (cpu_runtime/encoder: labels, faces, colours, shapes and text).
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("GOMP_SPINCOUNT", "10000")  # see cpu_engine/tensorrt_llm/1/model.py

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_runtime.engine.checkpoint import load_tokenizer  # noqa: E402
from cpu_runtime.engine.engine import Engine  # noqa: E402
from cpu_runtime.engine.final import FinalGate, check_period  # noqa: E402
from cpu_runtime.engine.kv import KvManager, kv_config  # noqa: E402
from cpu_runtime.engine.lora import DEFAULT_HOST_CACHE_BYTES, MODULES, LoraAdapter, LoraCache  # noqa: E402
from cpu_runtime.engine.requests import GenerationRequest  # noqa: E402
from cpu_runtime.engine.runner import EngineRunner  # noqa: E402
from cpu_runtime.engine.service import EngineService  # noqa: E402
from cpu_runtime.engine.threads import engine_threads  # noqa: E402
from cpu_runtime.llmapi_standin import images, llm_args  # noqa: E402
from cpu_runtime.llmapi_standin.peft import PathAdapters, lora_request  # noqa: E402
from cpu_runtime.llmapi_standin.requests import generation_request, read_request  # noqa: E402

CONFIG_ENV = "LLM_CONFIG_PATH"
ENCODER_PARAMETER = "cpu_ocr_encoder_dir"  # written by setup/repo/llmapi.py for the CPU demo
MAX_IMAGES = 4
# Upstream's texts (tests/data/upstream/trtllm-0a710573/llmapi.yaml, behaviour.errors).
MSG_PREFIX = "Error generating request: "
MSG_CANCELLED = "Request cancelled by client"
MSG_STOP_WITHOUT_ID = "A request id must be provided for request cancellation"
MSG_STREAMING = "Streaming is only supported in decoupled mode."


def _config_path():
    return Path(pb_utils.get_model_dir()) / os.environ.get(CONFIG_ENV, "model.yaml")


def _error(text, cancelled=False):
    code = getattr(pb_utils.TritonError, "CANCELLED", None) if cancelled else None
    error = pb_utils.TritonError(text, code) if code is not None else pb_utils.TritonError(text)
    na = pb_utils.Tensor("text_output", np.array([b"N/A"], dtype=np.object_))
    return pb_utils.InferenceResponse(output_tensors=[] if cancelled else [na], error=error)


class TritonPythonModel:
    @classmethod
    def auto_complete_config(cls, auto_complete_model_config):
        triton = llm_args.read_model_yaml(_config_path())["triton_config"]
        auto_complete_model_config.set_model_transaction_policy(dict(decoupled=bool(triton["decoupled"])))
        auto_complete_model_config.set_max_batch_size(int(triton["max_batch_size"]))
        return auto_complete_model_config

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.args = llm_args.read_model_yaml(_config_path())
        self.triton = self.args.pop("triton_config")
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.multimodal = bool(self.triton.get("multimodal"))
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        self.encoder_dir = params.get(ENCODER_PARAMETER, "")
        self._active = {}  # triton request id -> GenerationRequest
        self._lock = threading.Lock()
        # final sends and cancellation questions, never crossed; a client asked at most once per check period
        self._final = FinalGate(check_period(self.triton.get("cancellation_check_period_ms", "")))
        self.service = EngineService(self._build, self._dispatch, self._final.cancelled, name="llmapi-cpu")
        self.service.start()

    def _build(self):
        """Runs on the engine thread (cpu_runtime/engine/service.py)."""
        threads = engine_threads()
        torch.set_num_threads(threads)
        engine_config = llm_args.engine_config(self.args)
        model = Path(engine_config["hf_model_dir"])
        self.runner = EngineRunner(model, {}, logger=pb_utils.Logger, config=engine_config)
        self.runner.lora.cache = LoraCache(DEFAULT_HOST_CACHE_BYTES, max_entries=llm_args.max_cpu_loras(self.args))
        self.adapters = PathAdapters(self.runner.lora, MODULES, LoraAdapter, enabled=bool(self.args.get("lora_config")))
        kv = kv_config(llm_args.kv_params(self.args), self.runner.max_batch_size, self.runner.limits.max_seq_len,
                       self.runner.kv_bytes_per_token, log=pb_utils.Logger.log_warn)
        self.kv = KvManager(kv)
        self.engine = Engine(self.runner, self.kv, self.runner.max_batch_size, self.runner.max_num_tokens)
        self.tokenizer = load_tokenizer(model)
        self.header = images.user_header(self.tokenizer)
        self.encoder = None
        if self.multimodal and self.encoder_dir:
            from cpu_runtime.encoder.encoder import make_encoder

            self.encoder = make_encoder(self.encoder_dir, str(model))
        ignored = llm_args.ignored_keys(self.args)
        pb_utils.Logger.log_info(
            f"llmapi cpu stand-in: {model.name}, max_batch_size {self.engine.max_batch}, max_num_tokens "
            f"{self.engine.max_num_tokens}, KV {kv.total_blocks} blocks, LoRA "
            f"{'on' if self.adapters.enabled else 'off'}, images {'on' if self.encoder else 'off'}"
            + (f"; LLM arguments not used on the CPU: {', '.join(ignored)}" if ignored else ""))
        return self.engine, None

    # ---- intake ---------------------------------------------------------------------------
    def execute(self, requests):
        pending = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            stop = pb_utils.get_input_tensor_by_name(request, "stop")
            if stop is not None and bool(stop.as_numpy().reshape(-1)[0]):
                self._answer_now(sender, pending, self._stop_by_id(request.request_id()))
                continue
            try:
                gen = self._parse(request)
            except (ValueError, RuntimeError) as exc:
                self._answer_now(sender, pending, _error(MSG_PREFIX + str(exc)))
                continue
            gen.sender, gen.request = sender, request
            gen.arrival_ns, gen.done = time.time_ns(), threading.Event()
            if gen.request_id:
                with self._lock:
                    self._active[gen.request_id] = gen
            self.service.submit(gen)
            pending.append((gen, None))
        if self.decoupled:
            return None
        out = []
        for gen, ready in pending:
            if gen is not None:
                gen.done.wait()
                ready = gen.final_response
            out.append(ready)
        return out

    @staticmethod
    def _answer_now(sender, pending, response):
        if sender is not None:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        else:
            pending.append((None, response))

    def _stop_by_id(self, request_id):
        """A `stop` request: end the request with the same id; answered as upstream does (CANCELLED)."""
        if not request_id:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(MSG_STOP_WITHOUT_ID))
        with self._lock:
            gen = self._active.get(request_id)
        if gen is not None:
            gen.stop_requested = True
        return _error(MSG_CANCELLED, cancelled=True)

    def _parse(self, request):
        def get(name):
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            return None if tensor is None else tensor.as_numpy()

        asked = read_request(get)
        if asked.streaming and not self.decoupled:
            raise ValueError(MSG_STREAMING)
        blocks = self._image_blocks(asked.image_urls)
        ids = images.prompt_ids(self.tokenizer, asked.prompt, blocks, self.header)
        gen = generation_request(GenerationRequest, asked, ids, self.runner.limits, self.tokenizer.eos_token_id,
                                 request.request_id() or "")
        gen.asked = asked
        gen.lora_adapter = self.adapters.acquire(lora_request(asked.lora))
        return gen

    def _image_blocks(self, urls):
        if not urls:
            return []
        if not self.multimodal or self.encoder is None:
            raise ValueError(images.MSG_NOT_MULTIMODAL)
        if len(urls) > MAX_IMAGES:
            raise ValueError(images.MSG_TOO_MANY.format(limit=MAX_IMAGES, count=len(urls)))
        blocks = []
        for index, url in enumerate(urls):
            number = index + 1 if len(urls) > 1 else None  # several: each block says which image it is
            ids, seen = images.image_ids(self.encoder, images.decode_image_url(url, index), number)
            pb_utils.Logger.log_verbose(f"llmapi cpu stand-in: image {index} saw: {seen}")
            blocks.append(ids)
        return blocks

    # ---- answers --------------------------------------------------------------------------
    def _text(self, gen):
        """All text so far (the LLM API's output.text), cut at the first stop string; (text, stop hit)."""
        text = self.tokenizer.decode(gen.output_ids, skip_special_tokens=True)
        hits = [(text.find(s), s) for s in gen.asked.stop if s and s in text]
        if hits:
            at, stop = min(hits)
            return text[:at], stop
        return text, None

    def _dispatch(self, event):
        gen = event.gen
        if gen.done.is_set():
            return  # answered already (a stop string ended it before the engine dropped it)
        try:
            if event.token is not None:
                text, stop = self._text(gen)
                if stop is not None:
                    gen.stop_requested = True  # the engine drops it at its next step
                    self._finish(gen, text, "stop", stop)
                elif gen.asked.streaming and not gen.finished:
                    gen.sender.send(self._response(gen, text, None), flags=0)
            if event.done and event.cancelled:
                pb_utils.Logger.log_info(
                    f"llmapi cpu stand-in: request '{gen.request_id}' ({'stop' if gen.stop_requested else 'cancel'}) "
                    f"ended after {len(gen.output_ids)} tokens")
            if event.done and not gen.done.is_set():
                if event.error is not None:
                    self._finish(gen, error=_error(MSG_PREFIX + event.error))
                elif event.cancelled and not gen.stop_requested:
                    self._finish(gen, error=_error(MSG_CANCELLED, cancelled=True))
                else:
                    text, _ = self._text(gen)
                    reason = ("cancelled" if event.cancelled else
                              "length" if len(gen.output_ids) >= gen.max_new_tokens else "stop")
                    self._finish(gen, text, reason, None)
        except Exception as exc:  # a failure to answer one request ends that request only
            self._finish(gen, error=_error(f"{MSG_PREFIX}CPU stand-in error: {exc}"))

    def _response(self, gen, text, finish_reason, stop_reason=None):
        returns = gen.asked.returns
        tensors = [pb_utils.Tensor("text_output", np.array([text.encode("utf-8")], dtype=np.object_))]
        if returns.get("return_finish_reason"):
            tensors.append(pb_utils.Tensor("finish_reason", np.array([str(finish_reason).encode()], dtype=np.object_)))
        if returns.get("return_stop_reason"):
            tensors.append(pb_utils.Tensor("stop_reason", np.array([str(stop_reason).encode()], dtype=np.object_)))
        if returns.get("return_cumulative_logprob"):
            tensors.append(pb_utils.Tensor("cumulative_logprob", np.array([sum(gen.log_probs)], dtype=np.float32)))
        if gen.asked.sampling.get("return_perf_metrics"):
            tensors += self._perf(gen)
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def _perf(self, gen):
        new = gen.kv_new_blocks + (gen.kv.new_total if gen.kv is not None else 0)
        reused = gen.kv_reused_blocks + (gen.kv.reused_total if gen.kv is not None else 0)
        total = new + reused
        figures = {
            "kv_cache_reused_block": np.array([reused], np.int32), "kv_cache_missed_block": np.array([new], np.int32),
            "kv_cache_alloc_new_blocks": np.array([new], np.int32),
            "kv_cache_alloc_total_blocks": np.array([total], np.int32),
            "kv_cache_hit_rate": np.array([reused / total if total else 0.0], np.float32),
            "arrival_time_ns": np.array([gen.arrival_ns], np.int64),
            "first_scheduled_time_ns": np.array([gen.first_scheduled_ns], np.int64),
            "first_token_time_ns": np.array([gen.first_token_ns], np.int64),
            "last_token_time_ns": np.array([time.time_ns()], np.int64),
            "acceptance_rate": np.array([0.0], np.float32),  # no speculative decoding on the CPU
            "total_accepted_draft_tokens": np.array([0], np.int32), "total_draft_tokens": np.array([0], np.int32),
        }
        return [pb_utils.Tensor(name, value) for name, value in figures.items()]

    def _finish(self, gen, text="", finish_reason=None, stop_reason=None, error=None):
        if gen.done.is_set():
            return
        with self._lock:
            self._active.pop(gen.request_id, None)
        self.runner.release(gen)
        response = error or self._response(gen, text, finish_reason, stop_reason)
        gen.final_response = response
        self._final.send_final(gen, lambda: gen.sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL))
        gen.done.set()

    def finalize(self):
        self.service.stop()
