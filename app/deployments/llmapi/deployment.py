"""Triton's `llmapi` model (TensorRT-LLM 1.x, PyTorch backend) behind the deployment interface.

The prompt is built here with the model's chat template; the request carries only the inputs the served
config declares. Adapters go by `lora_id` + `lora_name` + `lora_path`, where the path is where the *server*
reads the PEFT folder: `server_adapters_dir` (default: the app's adapters folder, i.e. the same host). When
that folder is another one the app can write (a shared mount), an adapter is copied there on first use.
Images go as `image_url` data URIs, several per message, where the config declares `image_url`.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

from app.adapters.audit import LoraTarget
from app.adapters.registry import AdapterRegistry
from app.core.errors import InvalidRequest, TextOnlyDeployment
from app.core.messages import MSG_TEXT_ONLY
from app.deployments.base import AdapterState, ReplyRequest, check_adapter_name
from app.deployments.image_urls import check_image_count, image_data_url
from app.deployments.llmapi.stream import LlmApiStream
from app.deployments.messages import (
    LLMAPI_KIND,
    MSG_LLMAPI_COPY_FAILED,
    MSG_LLMAPI_NO_LORA,
    MSG_LLMAPI_NOT_PEFT,
    MSG_LLMAPI_SHARED,
    MSG_SHAPES_LLMAPI,
)
from app.deployments.prompts import PromptBuilder
from app.deployments.triton_served import TritonServed
from app.triton.client import TritonChatClient
from app.triton.declared_inputs import build_inputs
from setup.lora.audit import model_target_or_none

LORA_INPUTS = ("lora_id", "lora_name", "lora_path")


class LlmApiDeployment(TritonServed):
    """One Triton server and its llmapi model (`tensorrt_llm` in upstream's layout)."""

    kind = LLMAPI_KIND
    logprobs_input = "return_cumulative_logprob"
    server_note = " (llmapi)"

    def __init__(self, client: TritonChatClient, registry: AdapterRegistry, template: str = "chatml",
                 tokenizer_dir: str | None = None, system_prompt: str = "",
                 server_adapters_dir: str | Path | None = None, metrics: str | None = None):
        self.client, self.registry = client, registry
        self.template, self.tokenizer_dir, self.system_prompt = template, tokenizer_dir, system_prompt
        self.server_adapters_dir = Path(server_adapters_dir) if server_adapters_dir else None
        self._metrics = metrics
        self._prompts: PromptBuilder | None = None
        self._target: LoraTarget | None = None
        self._lock = threading.Lock()

    def for_model(self, model: str) -> LlmApiDeployment:
        client = TritonChatClient(self.client.url, model=model, stall_timeout=self.client.stall_timeout)
        return LlmApiDeployment(client, self.registry, self.template, self.tokenizer_dir, self.system_prompt,
                                self.server_adapters_dir, self._metrics)

    def warm_up(self) -> None:
        try:
            self.prompts()
        except Exception:  # noqa: BLE001 - the first reply builds it again and reports what failed
            pass

    def prompts(self) -> PromptBuilder:
        with self._lock:
            if self._prompts is None:
                self._prompts = PromptBuilder(template_name=self.template, tokenizer_dir=self.tokenizer_dir,
                                              system_prompt=self.system_prompt)
            return self._prompts

    def model_folder(self) -> str | None:
        """The tokenizer folder the app was given (the demo's: the model's own folder)."""
        return self.tokenizer_dir

    # ---- adapters by path --------------------------------------------------------------------------
    def server_folder(self) -> Path:
        return (self.server_adapters_dir or self.registry.folder).resolve()

    def adapter_path(self, adapter: str) -> Path:
        """Where the server reads `adapter`, copying it there first when the server's folder is another one."""
        check_adapter_name(adapter, self.registry.names())
        info = self.registry.info(adapter)
        if info.kind != "peft":
            raise InvalidRequest(MSG_LLMAPI_NOT_PEFT.format(adapter=adapter))
        folder = self.server_folder()
        target = folder / adapter
        if folder != self.registry.folder.resolve() and not target.is_dir():
            self._copy_to_server(adapter, info.path, folder)
        return target

    def _copy_to_server(self, adapter: str, source: Path, folder: Path) -> None:
        staging = folder / f".{adapter}.copying"
        try:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(source, staging)
            staging.rename(folder / adapter)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            detail = exc.strerror or str(exc)
            raise InvalidRequest(MSG_LLMAPI_COPY_FAILED.format(adapter=adapter, folder=folder, detail=detail)) from None

    def _lora_values(self, adapter: str | None) -> dict[str, object]:
        if not adapter:
            return {}
        if any(name not in self.client.model_info().inputs for name in LORA_INPUTS):
            raise InvalidRequest(MSG_LLMAPI_NO_LORA.format(model=self.client.model, adapter=adapter))
        path = self.adapter_path(adapter)
        return {"lora_id": self.lora_id(adapter), "lora_name": adapter, "lora_path": str(path)}

    def lora_id(self, adapter: str) -> int:
        """The server caches adapters by lora_id for every client it has; the registry's task id comes from the
        adapter's content, so two clients never share an id for different weights."""
        return self.registry.task_id(adapter)

    def adapter_names(self) -> list[str]:
        return [a.name for a in self.registry.list() if a.kind == "peft"]

    def lora_target(self) -> LoraTarget:
        """Every language-model module (the PyTorch backend applies LoRA to the language model), checked against
        the shapes, layers and vocabulary of the model folder the app was given (the demo's: the model's own);
        without one readable, any language-model module of any shape."""
        if self._target is None:  # read once: the folder is the app's setting
            found = model_target_or_none(Path(self.tokenizer_dir), self.kind) if self.tokenizer_dir else None
            self._target = found or LoraTarget(server=self.kind, unchecked=MSG_SHAPES_LLMAPI.format(
                folder=self.tokenizer_dir or "none"))
        return self._target

    def adapters(self) -> list[AdapterState]:
        return [AdapterState(name=a.name, held_by_server=None, rank=a.rank, target_modules=a.target_modules,
                             size_bytes=a.size_bytes, task_id=self.lora_id(a.name), kind=a.kind,
                             path=self.server_folder() / a.name) for a in self.registry.list() if a.kind == "peft"]

    def adapter_problems(self) -> dict[str, str]:
        problems = self.registry.problems()
        problems.update({a.name: MSG_LLMAPI_NOT_PEFT.format(adapter=a.name)
                         for a in self.registry.list() if a.kind != "peft"})
        return problems

    def register_adapter(self, name: str, path: Path) -> str:
        return MSG_LLMAPI_SHARED.format(path=self.adapter_path(name))

    # ---- images -------------------------------------------------------------------------------------
    def check_images(self, files: Sequence[str | bytes], text: str) -> None:
        self._image_urls(list(files))

    def _image_urls(self, files: list) -> list[str] | None:
        if not files:
            return None
        if "image_url" not in self.client.model_info().inputs:
            raise TextOnlyDeployment(MSG_TEXT_ONLY)
        check_image_count(len(files))
        return [image_data_url(f) for f in files]

    # ---- replies -----------------------------------------------------------------------------------
    def open_reply(self, request: ReplyRequest) -> LlmApiStream:
        info = self.client.model_info()
        images = list(request.conversation.current_images())
        prompts = self.prompts()
        prompt = prompts.build(request.conversation, request.system_prompt)
        if not prompt:
            raise InvalidRequest("The prompt is empty.")
        prompt += request.continues  # the prompt ends inside the reply being continued
        p = request.sampling
        stop = [*prompts.stop_words(), *request.stop]
        values: dict[str, object] = {
            "text_input": prompt, "streaming": True, "sampling_param_max_tokens": int(p.max_tokens),
            "sampling_param_temperature": float(p.temperature), "sampling_param_top_k": int(p.top_k),
            "sampling_param_top_p": float(p.top_p), "sampling_param_seed": int(p.seed),
            "sampling_param_repetition_penalty": float(p.repetition_penalty),
            "sampling_param_presence_penalty": float(p.presence_penalty),
            "sampling_param_frequency_penalty": float(p.frequency_penalty),
            "sampling_param_stop": stop or None, "return_finish_reason": True,
            "sampling_param_return_perf_metrics": True, "image_url": self._image_urls(images),
            "return_cumulative_logprob": True if request.logprobs else None,
            **self._lora_values(request.adapter),
        }
        if not info.decoupled:
            raise InvalidRequest(f"Model '{info.name}' is not decoupled (model.yaml triton_config.decoupled), so it "
                                 "cannot stream; redeploy it with streaming on.")
        return LlmApiStream(self.client.url, info, build_inputs(info, values), self.client.stall_timeout,
                            values.get("lora_path"))

