"""TensorRT-LLM's MultimodalModelRunner behind Triton: one decoupled Python model.

At start it imports the runner class (parameter runner_class), finds its release by the signatures recorded in
runner_eras.yaml, builds the `args` object that release's constructor reads from the family's visual engine, LLM
engine and Hugging Face folders, and constructs the runner, so preprocessing and the prompt template are the
release's own. The runner is not thread-safe (facts §5) and makes its CUDA stream current in the thread that
constructs it, so one worker thread constructs it and then runs the requests in arrival order.

The runner itself never streams. Where its release records how (1.x: decoder-only LLMs but mllama, in a session whose
LLM runner takes `streaming`), a request is answered by the runner's own preprocessing and LLM call with streaming
on, each new piece of text as its own response (runner_lib/streaming.py); otherwise through the era's run(), the
whole reply in one response. The final response's reply_mode says which ("streamed" or "whole reply"). The logic is
in runner_lib/, beside this file.
"""

import json
import queue
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gil_safe import requested_only  # noqa: E402
from model_params import as_bool, optional_input, param  # noqa: E402
from runner_lib.eras import detect_era, import_runner_class, load_eras, parse_eras, require_era  # noqa: E402
from runner_lib.replies import STREAMED, WHOLE_REPLY, answer  # noqa: E402
from runner_lib.requests import baked_adapters, check_lora_task, read_request  # noqa: E402
from runner_lib.runner_args import EngineFolders, build_args, combined_engine_dir, parse_settings  # noqa: E402
from runner_lib.streaming import StreamPlan, stream_answer, stream_plan  # noqa: E402

DEFAULT_CLASS = "tensorrt_llm.runtime:MultimodalModelRunner"


def _strings(name, text):
    return pb_utils.Tensor(name, np.array([str(text).encode("utf-8")], dtype=np.object_))


def _text_response(request, texts: dict):
    """A response of {output name: text}, only the outputs the client asked for (gil_safe.py says why)."""
    return pb_utils.InferenceResponse(output_tensors=[_strings(name, text)
                                                      for name, text in requested_only(request, texts).items()])


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        book = load_eras()
        runner_class = import_runner_class(param(config, "runner_class", DEFAULT_CLASS), book)
        self.era = detect_era(runner_class, book)
        self.family = param(config, "multimodal_family", "")
        # a family only some releases' runners handle (runner_eras), and args fields it must have (runner_required)
        require_era(self.era, parse_eras(param(config, "runner_eras", "")), runner_class, self.family)
        required = parse_settings(param(config, "runner_required", ""))
        folders = EngineFolders(param(config, "visual_engine_dir"), param(config, "llm_engine_dir"),
                                param(config, "hf_model_dir"))
        folders.check()
        settings = parse_settings(param(config, "runner_settings", ""))
        # the 1.x runner's engine_dir: a temporary folder of two links (vision/, llm/), removed at finalize
        self.links = combined_engine_dir(folders) if self.era.combined_engine_dir else None
        try:
            runner_args = build_args(self.era, folders, settings, engine_dir=self.links, required=required)
            # what a request that sends no sampling value gets: the era's defaults with the deployment's settings
            self.sampling_defaults = {name: getattr(runner_args, name) for name in self.era.sampling_args}
            # The runner makes its CUDA stream current in the thread that constructs it (facts §0 threads; PyTorch's
            # current stream is per thread), so one worker thread constructs it and then serves every request.
            self.jobs = queue.Queue()
            built = {}
            ready = threading.Event()
            self.worker = threading.Thread(target=self._work, args=(runner_class, runner_args, built, ready),
                                           name="multimodal-runner", daemon=True)
            self.worker.start()
            ready.wait()
            if "error" in built:
                raise built["error"]
            self.runner = built["runner"]
        except BaseException:
            self._remove_links()
            raise
        self.max_tokens = int(param(config, "runner_max_tokens", "1024"))
        self.default_tokens = int(param(config, "runner_default_max_tokens", "128"))
        self.max_images = int(param(config, "max_num_images", "1"))
        self.takes_video = as_bool(param(config, "takes_video", "false"))
        # takes_lora false: the family's path in the runner passes no LoRA task (mllama), so none is accepted
        self.family_takes_lora = param(config, "takes_lora", "").strip().lower() not in ("false", "0", "no")
        # the adapters the LLM engine was built with, in load order (lora_task_id 0, 1, ...): an unknown id is refused
        self.lora_adapters = baked_adapters(param(config, "lora_adapters", ""))
        plan = stream_plan(self.runner, self.era, book)
        # streamed replies need a decoupled model (several responses per request)
        self.plan = plan if isinstance(plan, StreamPlan) and self.decoupled else None
        how = f"{STREAMED} through {plan.llm_runner}" if self.plan else \
            f"{WHOLE_REPLY}: {plan if isinstance(plan, str) else 'the model is not decoupled'}"
        model_type = getattr(self.runner, "model_type", "")
        self.prompt_format = getattr(self.runner, "prompt_format", None) or \
            f"{model_type or 'this family'}: the runner's own template"
        pb_utils.Logger.log_info(f"multimodal_runner: {runner_class.__module__}.{runner_class.__name__}, release "
                                 f"{self.era.name}, {self.prompt_format}, {how}")

    def execute(self, requests):
        done = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            job = (request, sender, threading.Event(), [])
            self.jobs.put(job)
            done.append(job)
        if self.decoupled:
            return None
        for _, _, finished, _ in done:
            finished.wait()
        return [out[0] for _, _, _, out in done]

    def _work(self, runner_class, runner_args, built, ready):
        """Construct the runner, then answer the queued requests in arrival order, all on this one thread."""
        try:
            built["runner"] = runner_class(runner_args)
        except BaseException as exc:  # noqa: BLE001 - handed to initialize, which raises it
            built["error"] = exc
            return
        finally:
            ready.set()
        while True:
            job = self.jobs.get()
            if job is None:
                return
            request, sender, finished, out = job
            response = self._respond(request, sender)
            if sender is not None and response is not None:
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            out.append(response)
            finished.set()

    def _respond(self, request, sender):
        """The request's final response (None when the client has gone); a streamed reply sends its pieces first."""
        if sender is not None and hasattr(request, "is_cancelled") and request.is_cancelled():
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        try:
            asked = read_request(lambda name: optional_input(request, name), self.max_tokens, self.default_tokens,
                                 self.max_images)
            check_lora_task(asked, self.lora_adapters)
            if asked.video is not None and not self.takes_video:
                raise ValueError("This family reads images, not videos; send image_bytes.")
            if self.plan is not None:
                return self._streamed(request, sender, asked)
            reply = answer(self.runner, self.era, asked, self.family_takes_lora, self.family, self.sampling_defaults)
        except ValueError as exc:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
        except Exception as exc:  # a runner failure ends this request only
            pb_utils.Logger.log_error(f"multimodal_runner: {type(exc).__name__}: {exc}")
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"The runner failed: {exc}"))
        return self._final(request, reply.text, reply.finish_reason, WHOLE_REPLY)

    def _streamed(self, request, sender, asked):
        """Each new piece of text as a non-final response, then the final one with the rest and the figures."""
        def send(delta):
            sender.send(_text_response(request, {"text_output": delta}))

        cancelled = getattr(request, "is_cancelled", lambda: False)
        streamed = stream_answer(self.runner, self.era, self.plan, asked, send, cancelled, self.family_takes_lora,
                                 self.family, self.sampling_defaults)
        if streamed.cancelled:
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        return self._final(request, streamed.rest, streamed.reply.finish_reason, STREAMED)

    def _final(self, request, text, finish_reason, reply_mode):
        return _text_response(request, {"text_output": text, "finish_reason": finish_reason, "reply_mode": reply_mode,
                                        "runner_era": self.era.name, "prompt_format": self.prompt_format})

    def _remove_links(self):
        if self.links:
            shutil.rmtree(self.links, ignore_errors=True)

    def finalize(self):
        self.jobs.put(None)
        self.worker.join()
        self._remove_links()
