"""CPU engine: a Triton Python model in the place of the TensorRT-LLM C++ backend.

It takes the `tensorrt_llm` model's inputs and returns its outputs (backend v0.19 contract) and runs
a Hugging Face causal LM with PyTorch on the CPU. A scheduler thread batches in flight
(cpu_runtime/engine/engine.py, copied beside this file): each step is one forward pass over every running request, new requests join
between steps, finished or cancelled ones (client cancel or a `stop` request with the same id) leave
at the next step. A second thread sends each step's responses while the next step runs. KV-cache and
batch figures are published as the backend's `nv_trt_llm_*` metrics.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

# OpenMP workers spin up to GOMP_SPINCOUNT iterations before sleeping; libgomp's default (300000, a few
# ms) makes two busy processes on a small machine spin against each other at every barrier (a hundred
# times slower steps were seen with two engines on two cores). A short spin
# still bridges the gaps between a step's parallel regions. Read when PyTorch loads libgomp, so set first.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_runtime.engine.engine import Engine  # noqa: E402
from cpu_runtime.engine.final import FinalGate, check_period  # noqa: E402
from cpu_runtime.engine.kv import KvManager, kv_config  # noqa: E402
from cpu_runtime.engine.requests import RequestError, parse_request  # noqa: E402
from cpu_runtime.engine.runner import EngineRunner  # noqa: E402
from cpu_runtime.engine.service import EngineService  # noqa: E402
from cpu_runtime.engine.threads import engine_threads, threads_summary  # noqa: E402
from cpu_runtime.engine.triton_metrics import EngineMetrics  # noqa: E402

# every output this model can return, in the order it returns them
OUTPUTS = ("output_ids", "sequence_length", "cum_log_probs", "output_log_probs", "context_logits", "generation_logits",
           "batch_index", "sequence_index", "kv_cache_alloc_new_blocks", "kv_cache_reused_blocks",
           "kv_cache_alloc_total_blocks", "arrival_time_ns", "first_scheduled_time_ns", "first_token_time_ns",
           "last_token_time_ns")


def _params(config):
    out = {}
    for key, value in config.get("parameters", {}).items():
        text = value.get("string_value", "")
        if text and not text.startswith("${"):
            out[key] = text
    return out


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.params = _params(config)
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.exclude_input_default = self.params.get("exclude_input_in_output", "false").lower() in ("true", "1")
        self._names = (args.get("model_name", "tensorrt_llm"), args.get("model_version", "1"))
        self._active = {}  # triton request id -> GenerationRequest
        self._lock = threading.Lock()
        # final sends and cancellation questions, never crossed; a client asked at most once per check period
        self._final = FinalGate(check_period(self.params.get("cancellation_check_period_ms", "")))
        self.service = EngineService(self._build, self._dispatch, self._final.cancelled)
        self.service.start()

    def _build(self):
        """Runs on the engine thread (cpu_runtime/engine/service.py): every PyTorch call of the model happens there."""
        threads = engine_threads()
        torch.set_num_threads(threads)
        self.runner = EngineRunner(Path(self.params["gpt_model_path"]), self.params, logger=pb_utils.Logger)
        kv = kv_config(self.params, self.runner.max_batch_size, self.runner.limits.max_seq_len,
                       self.runner.kv_bytes_per_token, log=pb_utils.Logger.log_warn)
        self.engine = Engine(self.runner, KvManager(kv), self.runner.max_batch_size, self.runner.max_num_tokens)
        pb_utils.Logger.log_info(
            f"cpu engine: in-flight batching, max_batch_size {self.engine.max_batch}, max_num_tokens "
            f"{self.engine.max_num_tokens}, KV cache {kv.total_blocks} blocks of {kv.tokens_per_block} tokens, "
            f"{kv.policy}, reuse {'on' if kv.reuse else 'off'}, {threads_summary()}"
            + (", Partial LoRA (adapters apply at prompt-table rows only)" if self.runner.lora.engine.partial_mask else "")
        )
        self.metrics = EngineMetrics(pb_utils, *self._names, self.params)
        return self.engine, self.metrics

    # ---- request intake -------------------------------------------------------------------
    def execute(self, requests):
        pending = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            try:
                stop = pb_utils.get_input_tensor_by_name(request, "stop")
                if stop is not None and bool(stop.as_numpy().reshape(-1)[0]):
                    self._stop_by_id(request.request_id())
                    if sender is not None:
                        sender.send(pb_utils.InferenceResponse([]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    else:
                        pending.append((None, pb_utils.InferenceResponse([])))
                    continue
                gen = parse_request(request, self.runner.limits, self.exclude_input_default)
                if gen.streaming and not self.decoupled:
                    raise RequestError("Streaming is only supported if model is deployed using decoupled mode.")
                self.runner.attach_lora(gen)  # last check: from here on the adapter is held until _finish
                gen.sender = sender
                gen.request = request
                gen.arrival_ns = time.time_ns()
                gen.done = threading.Event()
                if gen.request_id:
                    with self._lock:
                        self._active[gen.request_id] = gen
                self.service.submit(gen)
                pending.append((gen, None))
            except (RequestError, ValueError) as exc:
                error = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
                if sender is not None:
                    sender.send(error, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                else:
                    pending.append((None, error))
        if self.decoupled:
            return None
        responses = []
        for gen, ready in pending:
            if gen is not None:
                gen.done.wait()
                ready = gen.final_response
            responses.append(ready)
        return responses

    def _stop_by_id(self, request_id):
        if not request_id:
            raise RequestError("Trying to stop a request but request ID is not provided")
        with self._lock:
            gen = self._active.get(request_id)
        if gen is not None:
            gen.stop_requested = True

    def _dispatch(self, event):
        gen = event.gen
        try:
            if event.token is not None and gen.streaming:
                self._send(gen, [event.token], [event.logprob], event.cum_logprob)
            if event.done:
                if event.cancelled:
                    pb_utils.Logger.log_info(
                        f"cpu engine: request '{gen.request_id}' ({'stop' if gen.stop_requested else 'cancel'}) "
                        f"ended after {len(gen.output_ids)} tokens"
                    )
                self._finish(gen, error=event.error)
        except Exception as exc:  # a failure to answer one request ends that request only
            self._finish(gen, error=f"CPU engine error: {exc}")

    def _outputs(self, gen, ids, log_probs, cum_logprob=None):
        """The response tensors the request asked for (all when it named none), only those built: the sender thread
        holds the GIL while it builds them, beside the engine thread's step."""
        if gen.wanted is None:
            gen.wanted = frozenset(gen.request.requested_output_names() or OUTPUTS)
        new_blocks = gen.kv_new_blocks + (gen.kv.new_total if gen.kv is not None else 0)
        reused = gen.kv_reused_blocks + (gen.kv.reused_total if gen.kv is not None else 0)
        makers = {
            "output_ids": lambda: np.array(ids, dtype=np.int32).reshape(1, 1, -1),
            "sequence_length": lambda: np.array([[len(ids)]], dtype=np.int32),
            "cum_log_probs": lambda: np.array(
                [[float(np.sum(gen.log_probs)) if cum_logprob is None else cum_logprob]], dtype=np.float32),
            "output_log_probs": lambda: np.array(log_probs, dtype=np.float32).reshape(1, 1, -1),
            "context_logits": lambda: gen.context_logits if gen.context_logits is not None
            else np.zeros((1, 1, 1), dtype=np.float32),
            "generation_logits": lambda: np.zeros((1, 1, 1, 1), dtype=np.float32),
            "batch_index": lambda: np.zeros((1, 1), dtype=np.int32),
            "sequence_index": lambda: np.zeros((1, 1), dtype=np.int32),
            "kv_cache_alloc_new_blocks": lambda: np.array([[new_blocks]], dtype=np.int32),
            "kv_cache_reused_blocks": lambda: np.array([[reused]], dtype=np.int32),
            "kv_cache_alloc_total_blocks": lambda: np.array([[new_blocks + reused]], dtype=np.int32),
            "arrival_time_ns": lambda: np.array([[gen.arrival_ns]], dtype=np.int64),
            "first_scheduled_time_ns": lambda: np.array([[gen.first_scheduled_ns]], dtype=np.int64),
            "first_token_time_ns": lambda: np.array([[gen.first_token_ns]], dtype=np.int64),
            "last_token_time_ns": lambda: np.array([[time.time_ns()]], dtype=np.int64),
        }
        return [pb_utils.Tensor(name, make()) for name, make in makers.items() if name in gen.wanted]

    def _send(self, gen, ids, log_probs, cum_logprob):
        gen.sender.send(pb_utils.InferenceResponse(self._outputs(gen, ids, log_probs, cum_logprob)), flags=0)

    def _finish(self, gen, error=None):
        if gen.done is not None and gen.done.is_set():
            return
        with self._lock:
            self._active.pop(gen.request_id, None)
        self.runner.release(gen)
        if error is not None:
            response = pb_utils.InferenceResponse(error=pb_utils.TritonError(error))
        elif gen.streaming and gen.sender is not None:
            response = None
        else:
            ids = gen.output_ids if gen.exclude_input else list(gen.input_ids) + gen.output_ids
            lps = gen.log_probs if gen.exclude_input else [0.0] * len(gen.input_ids) + gen.log_probs
            response = pb_utils.InferenceResponse(self._outputs(gen, ids, lps))
        gen.final_response = response
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        self._final.send_final(gen, lambda: gen.sender.send(flags=final) if response is None
                               else gen.sender.send(response, flags=final))
        gen.done.set()

    def finalize(self):
        self.service.stop()
        # the custom metrics go while the stub can still clear them; left to the interpreter's exit, older stubs
        # clear them after their shared memory is gone and segfault (python_backend PR #433)
        self.metrics = self.service.metrics = None
