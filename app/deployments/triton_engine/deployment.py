"""The Triton engine topology (ensemble / tensorrt_llm_bls) behind the deployment interface.

The prompt is built here with the model's template; images become the tensors the deployed model declares;
adapters go through the registry (weights on first use, task id after, re-sent after eviction).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from app.adapters.audit import LoraTarget
from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import ChatError, InvalidRequest
from app.deployments.base import AdapterState, LoraCacheReport, ReplyRequest, check_adapter_name
from app.deployments.messages import (
    ENGINE_KIND,
    MSG_IMAGE_MARKERS,
    MSG_IMAGE_REQUIRED,
    MSG_NO_LORA,
    MSG_TRITON_SENDS_ON_USE,
)
from app.deployments.model_lora import ModelAdapter, adapter_for_request, model_adapter
from app.deployments.prompts import DEFAULT_TEMPLATE, PromptBuilder, named_templates
from app.deployments.triton_engine.limits import (
    UNKNOWN,
    check_prompt_tokens,
    engine_model,
    read_input_limit,
    served_engine_dir,
)
from app.deployments.triton_served import TritonServed
from app.triton.client import TritonChatClient
from app.vision.multimodal import ImageSupport, image_support, prepare_images, strip_image_markers
from setup.lora.audit import target_or_none


class TritonEngineDeployment(TritonServed):
    """One Triton server and chat model (`tensorrt_llm_bls`, `ensemble`, or a test model such as pacing)."""

    kind = ENGINE_KIND
    logprobs_input = "return_log_probs"

    def __init__(self, client: TritonChatClient, registry: AdapterRegistry, template: str | None = None,
                 tokenizer_dir: str | None = None, system_prompt: str = "", engine_dir: str | None = None,
                 metrics: str | None = None, model_adapter: str | None = None):
        self.client, self.registry, self.model_adapter_name = client, registry, model_adapter
        self.template, self.tokenizer_dir, self.system_prompt = template, tokenizer_dir, system_prompt
        self.engine_dir, self._metrics = engine_dir, metrics
        self._prompts: PromptBuilder | None = None
        self._limit: object = UNKNOWN
        self._target: LoraTarget | None = None
        self._lock = threading.Lock()

    def for_model(self, model: str) -> TritonEngineDeployment:
        client = TritonChatClient(self.client.url, model=model, stall_timeout=self.client.stall_timeout)
        return TritonEngineDeployment(client, self.registry, self.template, self.tokenizer_dir, self.system_prompt,
                                      self.engine_dir, self._metrics, self.model_adapter_name)

    # ---- prompts -----------------------------------------------------------------------------------
    def _server_tokenizer_dir(self) -> str | None:
        if self.tokenizer_dir:
            return self.tokenizer_dir
        params = self.client.model_config("preprocessing").get("parameters", {})
        path = params.get("tokenizer_dir", {}).get("string_value", "")
        return path if path and Path(path).is_dir() else None

    def model_folder(self) -> str | None:
        """The tokenizer folder (--tokenizer, else preprocessing's tokenizer_dir): the HF model folder."""
        return self._server_tokenizer_dir()

    def _served_template(self) -> str | None:
        """The named template of the served family (InternLM-XComposer2: internlm2), when its family file names one
        of setup/data/prompt_templates.yaml (not "tokenizer", which means the tokenizer's own)."""
        support = self.image_support()
        name = support.family.prompt.chat_template if support is not None else None
        return name if name in named_templates() else None

    def template_name(self) -> str:
        """The named template: the one asked for (--template), else the served family's, else chatml. ChatError
        when it is not asked for and the server cannot say yet."""
        return self.template or self._served_template() or DEFAULT_TEMPLATE

    def warm_up(self) -> None:
        try:
            self.prompts()
        except Exception:  # noqa: BLE001 - the first reply builds it again and reports what failed
            pass

    def prompts(self) -> PromptBuilder:
        """The prompt builder; resolved on first use, once the server can say where its tokenizer is and which
        family it serves."""
        with self._lock:
            if self._prompts is not None:
                return self._prompts
            try:
                tokenizer_dir, template, settled = self._server_tokenizer_dir(), self.template_name(), True
            except ChatError:  # server not up yet: use the named template now, ask again next time
                tokenizer_dir, template, settled = None, self.template or DEFAULT_TEMPLATE, False
            builder = PromptBuilder(template_name=template, tokenizer_dir=tokenizer_dir,
                                    system_prompt=self.system_prompt)
            if settled:
                self._prompts = builder
            return builder

    def batch_model(self) -> str:
        """The model that runs the engine (the BLS model's tensorrt_llm, an ensemble's step), else the chat model."""
        try:
            return engine_model(self.client) or self.client.model
        except ChatError:
            return self.client.model

    def input_limit(self) -> int | None:
        """The engine's max input length in tokens; None when the app cannot read it (the server checks)."""
        if self._limit is UNKNOWN:
            limit = read_input_limit(self.client, self.engine_dir)
            if limit is UNKNOWN:
                return None
            self._limit = limit
        return self._limit

    # ---- images ------------------------------------------------------------------------------------
    def image_support(self) -> ImageSupport | None:
        """What the served model takes in images: None for a text model and for an image family this app does
        not know (its text turns still go; an image for it is refused by `check_images`). ChatError when the
        server cannot say yet."""
        try:
            return image_support(self.client.model_info())
        except InvalidRequest:
            return None

    # ---- replies -----------------------------------------------------------------------------------
    def own_adapter(self) -> ModelAdapter | None:
        """The served model's own adapter (InternLM-XComposer2's Partial LoRA), when its family has one."""
        return model_adapter(self.client.model_info(), self.model_adapter_name)

    def built_in_adapter(self) -> str | None:
        """The adapter applied to every reply whatever is picked (None when there is none, or it is the server's)."""
        try:
            own = self.own_adapter()
        except ChatError:  # server not up yet: nothing known about the model
            return None
        return own.name if own is not None else None

    def combines_adapters(self) -> bool:
        """Whether a reply can take another adapter besides the model's own (True when it has none, or when the
        server is not up yet: the request itself is refused then, in a sentence)."""
        try:
            own = self.own_adapter()
        except ChatError:
            return True
        return own is None or own.combines

    def probe_needs_image(self) -> bool:
        """Whether the served family answers only about an image or its adapter acts only at image rows."""
        try:
            own, support = self.own_adapter(), self.image_support()
        except ChatError:  # server not up yet: a text probe says so
            return False
        return bool(own is not None and own.partial) or bool(support is not None and support.family.image_required)

    def check_adapter(self, adapter: str | None) -> str | None:
        """The adapter the request sends (the model's own one when it has one); InvalidRequest when it cannot."""
        known = self.registry.names()
        adapter = check_adapter_name(adapter_for_request(self.own_adapter(), adapter or None, known), known)
        if adapter is None:
            return None
        if self.client.model_info().resolve("lora_task_id") is None:
            raise InvalidRequest(MSG_NO_LORA.format(model=self.client.model, adapter=adapter))
        return adapter

    def check_images(self, files: Sequence[str | bytes], text: str) -> None:
        if files:
            prepare_images(list(files), self.client.model_info(), text)  # raises with the specific message

    def _model_turns(self, conversation: Conversation, images: list) -> tuple[Conversation, dict]:
        """The conversation as the model sees it (image markers for this turn's images) and the image tensors."""
        info = self.client.model_info()
        if not images:
            support = self.image_support()
            if support is not None and support.family.image_required:
                raise InvalidRequest(MSG_IMAGE_REQUIRED.format(family=support.family.display_name))
            return conversation, {}
        turns = [turn.with_text(strip_image_markers(turn.text, info)) for turn in conversation.turns]
        last = max(i for i, turn in enumerate(turns) if not turn.is_reply)
        request = prepare_images(images, info, turns[last].text)
        turns[last] = turns[last].with_text(request.text)
        return Conversation(tuple(turns)), request.extra

    def _carried_image(self, conversation: Conversation) -> list:
        """For a model that needs an image on every request: the conversation's latest image, so a follow-up
        question is about the picture already shown (nothing for other models, or when there is none)."""
        support = self.image_support()
        if support is None or not support.family.image_required:
            return []
        return list(conversation.latest_images()[-1:])

    def _check_markers(self, prompt: str, images: int) -> None:
        """A model that takes one image per request gets its marker exactly once (its preprocessing splits there)."""
        support = self.image_support() if images else None
        if support is None or not support.one_image_per_request:
            return
        marker = support.family.prompt.image_marker
        if prompt.count(marker) != 1:
            raise InvalidRequest(MSG_IMAGE_MARKERS.format(marker=marker, count=prompt.count(marker)))

    def describe_images(self, files: Sequence[str | bytes]) -> list[dict] | None:
        """What the deployment's image encoder finds in `files`, when its encoder says (the CPU demo's)."""
        return self.client.image_descriptions(prepare_images(list(files), self.client.model_info(), "").extra)

    def open_reply(self, request: ReplyRequest):
        adapter = self.check_adapter(request.adapter)
        conversation = request.conversation
        prompts = self.prompts()
        prompt = prompts.build(conversation, request.system_prompt)
        check_prompt_tokens(self.input_limit(), prompts, prompt + request.continues)
        images = list(conversation.current_images()) or self._carried_image(conversation)
        turns, image_inputs = self._model_turns(conversation, images)
        if turns is not conversation:  # image markers changed the text
            prompt = prompts.build(turns, request.system_prompt)
        self._check_markers(prompt, len(images))
        prompt += request.continues  # the prompt ends inside the reply being continued
        stop_words = [*prompts.stop_words(), *request.stop]
        extra = {"stop_words": stop_words or None, "min_length": request.min_tokens or None,
                 "return_log_probs": True if request.logprobs else None, **image_inputs}
        modules = self.lora_target().trt_modules
        stream = self.registry.stream(self.client, adapter, prompt, request.sampling, extra=extra,
                                      modules=frozenset(modules) if modules else None)
        if image_inputs:
            stream.image_report = lambda: self.client.image_descriptions(image_inputs)
        return stream

    # ---- adapters ----------------------------------------------------------------------------------
    def lora_target(self) -> LoraTarget:
        """The engine's LoRA build settings and model shapes (its config.json, found through the engine model's
        gpt_model_path when the app was not given --engine-dir); any language-model module while unknown."""
        if self._target is None:
            try:
                folder = served_engine_dir(self.client, self.engine_dir)
            except ChatError:
                folder = None
            self._target = target_or_none(Path(folder)) if folder else None
            if self._target is None:
                return super().lora_target()
        return self._target

    def lora_cache(self) -> LoraCacheReport:
        """The server's LoRA cache as the app's requests saw it (weights sent and answered, evictions seen)."""
        return LoraCacheReport(seen=self.registry.cache_watch.view())

    def takes_adapters(self) -> bool:
        """Whether the deployed model declares LoRA inputs (a family without LoRA is written without them); True
        while the server cannot say yet (a request is refused in a sentence then)."""
        try:
            return self.client.model_info().resolve("lora_task_id") is not None
        except ChatError:
            return True

    def adapter_names(self) -> list[str]:
        """The adapters a reply can pick: none when the deployed model takes no LoRA inputs; the model's own adapter
        is not among them (it is always on)."""
        if not self.takes_adapters():
            return []
        own = self.built_in_adapter()
        return [a.name for a in self.registry.list() if a.name != own and a.name not in self.audit_refusals()]

    def audit_refusals(self) -> dict[str, str]:
        """name -> why the engine cannot take an adapter of the folder (its audit's refusals)."""
        audits = {name: self.adapter_audit(name) for name in self.registry.names()}
        return {name: " ".join(a.refusals) for name, a in audits.items() if a is not None and a.refused}

    def adapters(self) -> list[AdapterState]:
        refused = self.audit_refusals()
        return [AdapterState(name=a.name, held_by_server=a.held_by_server, rank=a.rank,
                             target_modules=a.target_modules, size_bytes=a.size_bytes, task_id=a.task_id,
                             kind=a.kind, path=a.path) for a in self.registry.list() if a.name not in refused]

    def adapter_problems(self) -> dict[str, str]:
        return {**self.audit_refusals(), **self.registry.problems()}

    def register_adapter(self, name: str, path: Path) -> str:
        return MSG_TRITON_SENDS_ON_USE
