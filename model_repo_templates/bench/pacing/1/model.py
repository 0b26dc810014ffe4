"""Pacing model: streams `max_tokens` words at `tokens_per_second`, one response per word, no compute.

Each request runs on its own thread against an absolute schedule (start + i / rate), so concurrent
requests are paced independently and a slow consumer does not slow the others. A cancelled request
(client cancel) ends at the next word. Each request ends with one log line:
    pacing: request '<id>' (done|cancel) ended after N tokens
Like the TensorRT-LLM backend, it reports nv_trt_llm_request_metrics{request_type="active"|"max"}.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango")


def _param(config, name, default):
    text = config.get("parameters", {}).get(name, {}).get("string_value", "")
    return float(text) if text and not text.startswith("${") else default


def _scalar(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return default if tensor is None else tensor.as_numpy().reshape(-1)[0].item()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.rate = max(_param(config, "tokens_per_second", 50.0), 0.001)
        self.first_delay = _param(config, "first_token_delay_ms", 0.0) / 1000.0
        time.sleep(_param(config, "startup_delay_seconds", 0.0))
        self._threads = set()
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._metrics = self._request_gauges(config)  # (family, active, max); kept alive with the model
        self._gauges = self._metrics[1] if self._metrics else None

    @staticmethod
    def _request_gauges(config):
        try:
            family = pb_utils.MetricFamily(name="nv_trt_llm_request_metrics", description="TRT LLM request metrics",
                                           kind=pb_utils.MetricFamily.GAUGE)
            labels = {"model": config["name"], "version": "1"}
            active = family.Metric(labels={**labels, "request_type": "active"})
            most = family.Metric(labels={**labels, "request_type": "max"})
            most.set(config.get("max_batch_size", 0))
            return family, active, most
        except Exception:  # noqa: BLE001 - metrics are optional (older servers)
            return None

    def _count_active(self):
        if self._gauges is not None:
            self._gauges.set(len(self._threads))

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            try:
                count = int(_scalar(request, "max_tokens", 0))
                if count < 1:
                    raise ValueError(f"max_tokens must be at least 1, got {count}")
            except Exception as exc:  # noqa: BLE001 - any bad input ends this request only
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            thread = threading.Thread(target=self._pace, args=(request.request_id(), sender, count), daemon=True)
            with self._lock:
                self._threads.add(thread)
                self._count_active()
            thread.start()
        return None

    def _pace(self, request_id, sender, count):
        sent, outcome = 0, "done"
        start = time.monotonic() + self.first_delay
        try:
            for index in range(count):
                delay = start + index / self.rate - time.monotonic()
                if delay > 0 and self._shutdown.wait(delay):
                    outcome = "shutdown"
                    break
                if sender.is_cancelled():
                    outcome = "cancel"
                    break
                word = (WORDS[index % len(WORDS)] + " ").encode()
                output = pb_utils.Tensor("text_output", np.array([[word]], dtype=np.object_))
                sender.send(pb_utils.InferenceResponse([output]))
                sent += 1
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception as exc:  # noqa: BLE001 - the client went away; nothing left to send to
            outcome = f"error: {exc}"
        finally:
            pb_utils.Logger.log_info(f"pacing: request '{request_id}' ({outcome}) ended after {sent} tokens")
            with self._lock:
                self._threads.discard(threading.current_thread())
                self._count_active()

    def finalize(self):
        self._shutdown.set()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=2)
        self._metrics = self._gauges = None  # cleared while the stub can (as the CPU engine's finalize says)
