"""CPU engine: a Triton Python model in the place of the TensorRT-LLM C++ backend.

It takes the `tensorrt_llm` model's inputs and returns its outputs (backend v0.19 contract) and runs
a Hugging Face causal LM with PyTorch on the CPU. Requests are decoded by a scheduler thread that
advances every active request by one token per round, so concurrent requests progress together;
cancellation (client cancel or a `stop` request with the same id) ends a request at the next token.
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch
import triton_python_backend_utils as pb_utils

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_lib.requests import RequestError, parse_request  # noqa: E402
from engine_lib.runner import EngineRunner  # noqa: E402


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
        threads = int(os.environ.get("CPU_ENGINE_THREADS", "0")) or max(1, (os.cpu_count() or 2))
        torch.set_num_threads(threads)
        self.runner = EngineRunner(Path(self.params["gpt_model_path"]), self.params, logger=pb_utils.Logger)
        self.exclude_input_default = self.params.get("exclude_input_in_output", "false").lower() in ("true", "1")
        self._active = {}  # triton request id -> GenerationRequest
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue = []
        self._shutdown = False
        self._thread = threading.Thread(target=self._loop, name="cpu-engine", daemon=True)
        self._thread.start()

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
                with self._wake:
                    self._queue.append(gen)
                    if gen.request_id:
                        self._active[gen.request_id] = gen
                    self._wake.notify()
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

    # ---- scheduler ------------------------------------------------------------------------
    def _loop(self):
        active = []
        while True:
            with self._wake:
                while not self._queue and not active and not self._shutdown:
                    self._wake.wait()
                if self._shutdown:
                    break
                active.extend(self._queue)
                self._queue.clear()
            still = []
            for gen in active:
                if self._advance(gen):
                    still.append(gen)
                else:
                    with self._lock:
                        self._active.pop(gen.request_id, None)
            active = still
        for gen in active:
            self._finish(gen, error="The CPU engine is shutting down.")

    def _cancelled(self, gen):
        if gen.stop_requested:
            return True
        try:
            if gen.sender is not None and gen.sender.is_cancelled():
                return True
            return gen.request.is_cancelled()
        except Exception:
            return False

    def _advance(self, gen):
        """One step for one request; False when the request is finished."""
        try:
            if self._cancelled(gen):
                pb_utils.Logger.log_info(
                    f"cpu engine: request '{gen.request_id}' ({'stop' if gen.stop_requested else 'cancel'}) ended after {len(gen.output_ids)} tokens"
                )
                self._finish(gen, cancelled=True)
                return False
            if gen.first_scheduled_ns == 0:
                gen.first_scheduled_ns = time.time_ns()
            token, logprob = self.runner.step(gen)
            if token is not None:
                gen.output_ids.append(token)
                gen.log_probs.append(logprob)
                if gen.first_token_ns == 0:
                    gen.first_token_ns = time.time_ns()
                if gen.streaming:
                    self._send(gen, [token], [logprob], final=False)
            if gen.finished:
                self._finish(gen)
                return False
            return True
        except Exception as exc:  # a failure ends this request only
            self._finish(gen, error=f"CPU engine error: {exc}")
            return False

    def _outputs(self, gen, ids, log_probs):
        ids_arr = np.array(ids, dtype=np.int32).reshape(1, 1, -1)
        lp = np.array(log_probs, dtype=np.float32).reshape(1, 1, -1)
        now = time.time_ns()
        tensors = {
            "output_ids": ids_arr,
            "sequence_length": np.array([[len(ids)]], dtype=np.int32),
            "cum_log_probs": np.array([[float(np.sum(gen.log_probs))]], dtype=np.float32),
            "output_log_probs": lp,
            "context_logits": gen.context_logits if gen.context_logits is not None
            else np.zeros((1, 1, 1), dtype=np.float32),
            "generation_logits": np.zeros((1, 1, 1, 1), dtype=np.float32),
            "batch_index": np.zeros((1, 1), dtype=np.int32),
            "sequence_index": np.zeros((1, 1), dtype=np.int32),
            "arrival_time_ns": np.array([[gen.arrival_ns]], dtype=np.int64),
            "first_scheduled_time_ns": np.array([[gen.first_scheduled_ns]], dtype=np.int64),
            "first_token_time_ns": np.array([[gen.first_token_ns]], dtype=np.int64),
            "last_token_time_ns": np.array([[now]], dtype=np.int64),
        }
        wanted = set(gen.request.requested_output_names() or tensors)
        return [pb_utils.Tensor(k, v) for k, v in tensors.items() if k in wanted]

    def _send(self, gen, ids, log_probs, final):
        response = pb_utils.InferenceResponse(self._outputs(gen, ids, log_probs))
        flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
        gen.sender.send(response, flags=flags)

    def _finish(self, gen, cancelled=False, error=None):
        self.runner.release(gen)
        if error is not None:
            response = pb_utils.InferenceResponse(error=pb_utils.TritonError(error))
        elif gen.streaming and gen.sender is not None:
            response = None
        else:
            ids = gen.output_ids if gen.exclude_input else list(gen.input_ids) + gen.output_ids
            lps = gen.log_probs if gen.exclude_input else [0.0] * len(gen.input_ids) + gen.log_probs
            response = pb_utils.InferenceResponse(self._outputs(gen, ids, lps))
        if gen.sender is not None:
            try:
                if response is None:
                    gen.sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                else:
                    gen.sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            except Exception:
                pass  # the client is gone (cancelled); nothing left to tell it
        else:
            gen.final_response = response
            gen.done.set()

    def finalize(self):
        with self._wake:
            self._shutdown = True
            self._wake.notify()
        self._thread.join(timeout=10)
