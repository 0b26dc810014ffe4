"""The runner topology behind the deployment interface.

TensorRT-LLM's runner keeps no history, so the request carries the last user turn's text, the images of that turn as
file bytes (a video as video_bytes where the model declares takes_video), and the settings the model declares (the
runner reads no presence or frequency penalty: runner_repetition). The runner wraps the text in its family's own
template, except for the families it takes the text verbatim from (BLIP-2, CogVLM, Fuyu, Kosmos-2, Nougat, Deplot):
for those the app writes the family file's runner_prompt around the question, and says so in the figures.

Encoder-decoder LLMs (the family file's runner_llm.encoder_decoder) go through EncDecModelRunner, which applies no
sampling, penalty or LoRA: no adapters are offered, an adapter is refused in a sentence, and a request that asks for
sampling or a penalty is answered greedily with a note in the figures saying what was not applied.

LoRA: the runner's LLM engine holds the adapters it was built with (trtllm-build --lora_dir A B), numbered 0, 1, ...
in that order; the repository records their names in load order (the lora_adapters parameter, written by setup).
Exactly those are offered, a request names one and sends its place as lora_task_id, and any other name is refused
in a sentence before anything is sent.

The audit's target is the LLM engine's config.json (the app's --engine-dir, else the model's llm_engine_dir on this
machine): its lora_target_modules, max_lora_rank and the model's shapes, as for the engine topology; without one, the
model folder's config.json (--tokenizer-dir, else hf_model_dir). trtllm-build keeps a copy of each built-in adapter
in the engine folder (lora/0, lora/1, ... in load order): those copies are what the Adapters table audits, and one
the audit refuses (made for another base model) is not offered. An adapter added to the folder is refused with
both names when the target refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.adapters.audit import AdapterAudit, LoraTarget
from app.adapters.intake import AdapterError
from app.adapters.registry import AdapterRegistry
from app.core.constants import WHOLE_REPLY_STALL_SECONDS
from app.core.conversation import VIDEO, Conversation
from app.core.errors import ChatError, InvalidRequest, TextOnlyDeployment
from app.core.messages import MSG_TEXT_ONLY
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import AdapterState, ReplyRequest
from app.deployments.messages import (
    MSG_RUNNER_APP_PROMPT,
    MSG_RUNNER_ENCDEC_LORA,
    MSG_RUNNER_ENCDEC_SETTINGS,
    MSG_RUNNER_IMAGES,
    MSG_RUNNER_LORA_NOT_BAKED,
    MSG_RUNNER_NO_BAKED,
    MSG_RUNNER_NO_LORA,
    MSG_RUNNER_NO_QUESTION,
    MSG_RUNNER_PENALTIES,
    MSG_SHAPES_RUNNER,
    RUNNER_KIND,
)
from app.deployments.runner.family import RunnerFamily, runner_family
from app.deployments.runner.stream import RunnerStream
from app.deployments.triton_served import TritonServed
from app.triton.client import TritonChatClient
from app.triton.declared_inputs import build_inputs
from setup.lora.audit import model_target_or_none, target_or_none

VIDEO_SUFFIXES = (".mp4", ".webm", ".gif", ".mov", ".avi")


def last_user_text(conversation: Conversation) -> str:
    """The text of the trailing message(s) of the person (its pictures are sent apart)."""
    texts = []
    for turn in reversed(conversation.turns):
        if turn.is_reply:
            break
        if turn.text:
            texts.insert(0, turn.text)
    return "\n".join(texts).strip()


def runner_repetition(sampling: SamplingParams) -> tuple[float, str]:
    """(the repetition penalty to send, a note when it stands in for the presence/frequency penalties the runner
    cannot read: only when the request sets those and leaves its own repetition penalty at 1)."""
    if sampling.repetition_penalty == 1.0 and (sampling.presence_penalty > 0 or sampling.frequency_penalty > 0):
        return REPETITION_FOR_PENALTIES, MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES)
    return float(sampling.repetition_penalty), ""


def encdec_unapplied(sampling: SamplingParams) -> list[str]:
    """The settings of `sampling` an encoder-decoder runner does not apply (it decodes greedily, one beam): sampling
    when the request samples (top-k above 1 or top-p above 0: the runner's own rule), and any penalty."""
    unapplied = []
    if sampling.top_k > 1 or sampling.top_p > 0:
        unapplied += [f"sampling (temperature {sampling.temperature:g}, top-k {sampling.top_k}, "
                      f"top-p {sampling.top_p:g})"]
    unapplied += [f"{label} {value:g}" for label, value, neutral in (
        ("repetition penalty", sampling.repetition_penalty, 1.0), ("presence penalty", sampling.presence_penalty, 0.0),
        ("frequency penalty", sampling.frequency_penalty, 0.0)) if value != neutral]
    return unapplied


def prompt_note(family: RunnerFamily) -> str:
    """The figures' word on the prompt the app wrote for a verbatim family ('' for the others)."""
    if family.prompt is None:
        return ""
    shown = family.prompt.template.replace("\n", "\\n")
    return MSG_RUNNER_APP_PROMPT.format(template=shown, family=family.name) + \
        ("" if family.prompt.reads_question else MSG_RUNNER_NO_QUESTION)


def sent_video(conversation: Conversation) -> str | bytes | None:
    """The new message's video that goes to the model whole (a path, or the bytes an API caller sent), if any."""
    return next((m.source for m in conversation.current_media() if m.kind == VIDEO and m.as_video
                 and m.source is not None), None)


def file_bytes(item: str | bytes) -> bytes:
    return item if isinstance(item, bytes) else Path(item).read_bytes()


class RunnerDeployment(TritonServed):
    """One Triton server and its multimodal_runner model."""

    kind = RUNNER_KIND
    server_note = " (MultimodalModelRunner)"

    def __init__(self, client: TritonChatClient, registry: AdapterRegistry, metrics: str | None = None,
                 engine_dir: str | None = None, tokenizer_dir: str | None = None):
        self.client, self.registry, self._metrics = client, registry, metrics
        self.engine_dir, self.tokenizer_dir = engine_dir, tokenizer_dir
        self._target: LoraTarget | None = None

    def for_model(self, model: str) -> RunnerDeployment:
        client = TritonChatClient(self.client.url, model=model, stall_timeout=self.client.stall_timeout)
        return RunnerDeployment(client, self.registry, self._metrics, self.engine_dir, self.tokenizer_dir)

    def _parameter(self, name: str, default: str = "") -> str:
        value = self.client.model_info().parameters.get(name, default)
        return default if not value or value.startswith("${") else value

    @property
    def family(self) -> str:
        return self._parameter("multimodal_family")

    def family_facts(self) -> RunnerFamily:
        """The served family's prompt and LLM facts from its family file (none for an unknown family)."""
        return runner_family(self.family)

    def model_folder(self) -> str | None:
        """The family's HF folder (hf_model_dir) when it is on this host: its generation_config.json."""
        path = self._parameter("hf_model_dir")
        return path if path and Path(path).is_dir() else None

    def takes_video(self) -> bool:
        return self._parameter("takes_video").lower() in ("true", "1", "yes")

    def max_images(self) -> int:
        return int(self._parameter("max_num_images", "1"))

    # ---- adapters: the ones the LLM engine was built with, by their place (lora_task_id) ---------------------
    def takes_lora(self) -> bool:
        """Whether the runner can take a LoRA task here: the model declares lora_task_id, the family's path in the
        runner passes one (takes_lora is not false: mllama) and its LLM is not encoder-decoder."""
        return self._parameter("takes_lora").lower() not in ("false", "0", "no") and \
            "lora_task_id" in self.client.model_info().inputs and not self.family_facts().encoder_decoder

    def baked_adapters(self) -> list[str]:
        """The adapters the LLM engine was built with, in load order (the repository's lora_adapters parameter):
        the runner knows them as "0", "1", ... in this order."""
        return [name.strip() for name in self._parameter("lora_adapters").split(",") if name.strip()]

    def adapter_names(self) -> list[str]:
        if not self.takes_lora():
            return []
        refused = self.audit_refusals()
        return [name for name in self.baked_adapters() if name not in refused]

    def adapters(self) -> list[AdapterState]:
        return [AdapterState(name=name, held_by_server=True, task_id=self.baked_adapters().index(name),
                             kind="built into the engine", path=self.baked_folder(name))
                for name in self.adapter_names()]

    # ---- the audit: the LLM engine's LoRA build settings and shapes ------------------------------------------
    def llm_engine_folder(self) -> str | None:
        """The LLM engine folder: the app's --engine-dir, else the model's llm_engine_dir when it is on this host."""
        if self.engine_dir:
            return self.engine_dir
        path = self._parameter("llm_engine_dir")
        return path if path and Path(path).is_dir() else None

    def lora_target(self) -> LoraTarget:
        """The LLM engine's config.json (modules, max_lora_rank, shapes), else the model folder's config.json
        (shapes), else any language-model module with the reason the shapes are unknown. Read once found."""
        if self._target is not None:
            return self._target
        try:
            engine, model, settled = self.llm_engine_folder(), self.tokenizer_dir or self.model_folder(), True
        except ChatError:  # the server cannot say its parameters now: the app's own folders, asked again next time
            engine, model, settled = self.engine_dir, self.tokenizer_dir, False
        found = (target_or_none(Path(engine)) if engine else None) or \
            (model_target_or_none(Path(model), self.kind) if model else None) or \
            LoraTarget(server=self.kind, unchecked=MSG_SHAPES_RUNNER.format(engine=engine or "none",
                                                                            model=model or "none"))
        if settled:
            self._target = found
        return found

    def baked_folder(self, name: str) -> Path | None:
        """trtllm-build's copy of built-in adapter `name` in the engine folder (lora/<its place>), when present."""
        baked = self.baked_adapters()
        try:
            engine = self.llm_engine_folder()
        except ChatError:
            engine = self.engine_dir
        if not engine or name not in baked:
            return None
        folder = Path(engine) / "lora" / str(baked.index(name))
        return folder if folder.is_dir() else None

    def adapter_audit(self, name: str) -> AdapterAudit | None:
        """A built-in adapter's engine copy against lora_target(); else the adapters folder's `name`."""
        folder = self.baked_folder(name)
        if folder is None:
            return super().adapter_audit(name)
        try:
            return self.registry.audit_at(folder, self.lora_target())
        except AdapterError:
            return None

    def audit_refusals(self) -> dict[str, str]:
        """name -> why the engine cannot take a built-in adapter (its audit's refusals)."""
        audits = {name: self.adapter_audit(name) for name in self.baked_adapters()}
        return {name: " ".join(a.refusals) for name, a in audits.items() if a is not None and a.refused}

    def _adapter_task(self, adapter: str, model: str) -> int:
        """The runner's uid of `adapter` (its place in the engine's load order); InvalidRequest naming it else."""
        facts = self.family_facts()
        if facts.encoder_decoder:
            raise InvalidRequest(MSG_RUNNER_ENCDEC_LORA.format(family=facts.name, adapter=adapter))
        if not self.takes_lora():
            raise InvalidRequest(MSG_RUNNER_NO_LORA.format(model=model))
        baked = self.baked_adapters()
        if adapter not in baked:
            listed = ", ".join(f"'{name}'" for name in baked) or MSG_RUNNER_NO_BAKED
            raise InvalidRequest(MSG_RUNNER_LORA_NOT_BAKED.format(adapter=adapter, model=model, baked=listed))
        refused = self.audit_refusals().get(adapter)
        if refused:
            raise InvalidRequest(refused)
        return baked.index(adapter)

    def adapter_problems(self) -> dict[str, str]:
        return {**self.audit_refusals(), **self.registry.problems()}

    def register_adapter(self, name: str, path: Path) -> str:
        raise InvalidRequest(MSG_RUNNER_NO_LORA.format(model=self.client.model))

    # ---- images -----------------------------------------------------------------------------------------
    def check_images(self, files: Sequence[str | bytes], text: str) -> None:
        self._pictures(list(files))

    def _pictures(self, files: list, video: str | bytes | None = None) -> dict[str, object]:
        """The request's picture inputs for `files`; `video`: the message's video, sent whole (its path or bytes)
        where the model takes video, else a video file among `files` (by its name)."""
        if not files:
            return {}
        inputs = self.client.model_info().inputs
        if "image_bytes" not in inputs:
            raise TextOnlyDeployment(MSG_TEXT_ONLY)
        if len(files) > self.max_images():
            raise InvalidRequest(MSG_RUNNER_IMAGES.format(family=self.family or self.client.model,
                                                          limit=self.max_images(), count=len(files)))
        videos = [video] if video is not None else \
            [f for f in files if isinstance(f, str) and f.lower().endswith(VIDEO_SUFFIXES)]
        if videos and self.takes_video() and "video_bytes" in inputs:
            return {"video_bytes": file_bytes(videos[0])}
        return {"image_bytes": [file_bytes(f) for f in files]}

    # ---- replies ----------------------------------------------------------------------------------------
    def open_reply(self, request: ReplyRequest) -> RunnerStream:
        info = self.client.model_info()
        if not info.decoupled:
            raise InvalidRequest(f"Model '{info.name}' is not decoupled; redeploy it with decoupled_mode true.")
        images = list(request.conversation.current_images())
        facts = self.family_facts()
        question = last_user_text(request.conversation)
        text = facts.prompt.apply(question) if facts.prompt is not None else question
        if request.continues:
            raise InvalidRequest("The runner keeps no conversation: it cannot continue a reply; ask again instead.")
        p = request.sampling
        notes = [prompt_note(facts)]
        if facts.encoder_decoder:  # nothing of the sampling reaches EncDecModelRunner: no stand-in, say what is lost
            repetition = float(p.repetition_penalty)
            unapplied = encdec_unapplied(p)
            notes.append(MSG_RUNNER_ENCDEC_SETTINGS.format(settings=", ".join(unapplied), family=facts.name)
                         if unapplied else "")
        else:
            repetition, note = runner_repetition(p) if "repetition_penalty" in info.inputs else (1.0, "")
            notes.append(note)
        values: dict[str, object] = {
            "text_input": text, "max_tokens": int(p.max_tokens), "temperature": float(p.temperature),
            "top_k": int(p.top_k), "top_p": float(p.top_p), "repetition_penalty": repetition,
            "stop_words": list(request.stop) or None, **self._pictures(images, sent_video(request.conversation)),
        }
        if request.adapter:
            values["lora_task_id"] = self._adapter_task(request.adapter, info.name)
        return RunnerStream(self.client.url, info, build_inputs(info, values),
                            max(self.client.stall_timeout, WHOLE_REPLY_STALL_SECONDS),
                            notes=tuple(n for n in notes if n), family=facts.name if facts.id else "")
