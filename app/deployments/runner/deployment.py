"""The runner topology behind the deployment interface.

TensorRT-LLM's runner wraps the question in its family's own template and keeps no history, so the request
carries the last user turn's bare text, the images of that turn as file bytes (a video as video_bytes where the
model declares takes_video), and the settings the model declares (the runner reads no presence or frequency
penalty: runner_repetition). LoRA goes as lora_task_id where the model
declares it; the runner itself refuses a task when its release takes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.adapters.registry import AdapterRegistry
from app.core.constants import WHOLE_REPLY_STALL_SECONDS
from app.core.conversation import VIDEO, Conversation
from app.core.errors import InvalidRequest, TextOnlyDeployment
from app.core.messages import MSG_TEXT_ONLY
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import AdapterState, ReplyRequest
from app.deployments.messages import MSG_RUNNER_IMAGES, MSG_RUNNER_NO_LORA, MSG_RUNNER_PENALTIES, RUNNER_KIND
from app.deployments.runner.stream import RunnerStream
from app.deployments.runner.wire import build_inputs
from app.deployments.triton_served import TritonServed
from app.triton.client import TritonChatClient

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

    def __init__(self, client: TritonChatClient, registry: AdapterRegistry, metrics: str | None = None):
        self.client, self.registry, self._metrics = client, registry, metrics

    def for_model(self, model: str) -> RunnerDeployment:
        client = TritonChatClient(self.client.url, model=model, stall_timeout=self.client.stall_timeout)
        return RunnerDeployment(client, self.registry, self._metrics)

    def _parameter(self, name: str, default: str = "") -> str:
        value = self.client.model_info().parameters.get(name, default)
        return default if not value or value.startswith("${") else value

    @property
    def family(self) -> str:
        return self._parameter("multimodal_family")

    def model_folder(self) -> str | None:
        """The family's HF folder (hf_model_dir) when it is on this host: its generation_config.json."""
        path = self._parameter("hf_model_dir")
        return path if path and Path(path).is_dir() else None

    def takes_video(self) -> bool:
        return self._parameter("takes_video").lower() in ("true", "1", "yes")

    def max_images(self) -> int:
        return int(self._parameter("max_num_images", "1"))

    # ---- adapters: task ids where the model declares lora_task_id -----------------------------------------
    def takes_lora(self) -> bool:
        """Whether the deployment says its runner takes a LoRA task (takes_lora) and the model declares the input."""
        return self._parameter("takes_lora").lower() in ("true", "1", "yes") and \
            "lora_task_id" in self.client.model_info().inputs

    def adapter_names(self) -> list[str]:
        return self.registry.names() if self.takes_lora() else []

    def adapters(self) -> list[AdapterState]:
        return [AdapterState(name=a.name, held_by_server=None, rank=a.rank, target_modules=a.target_modules,
                             size_bytes=a.size_bytes, task_id=self.registry.task_id(a.name), kind=a.kind, path=a.path)
                for a in self.registry.list()] if self.adapter_names() else []

    def adapter_problems(self) -> dict[str, str]:
        return self.registry.problems()

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
        text = last_user_text(request.conversation)
        if request.continues:
            raise InvalidRequest("The runner keeps no conversation: it cannot continue a reply; ask again instead.")
        p = request.sampling
        repetition, note = runner_repetition(p) if "repetition_penalty" in info.inputs else (1.0, "")
        values: dict[str, object] = {
            "text_input": text, "max_tokens": int(p.max_tokens), "temperature": float(p.temperature),
            "top_k": int(p.top_k), "top_p": float(p.top_p), "repetition_penalty": repetition,
            "stop_words": list(request.stop) or None, **self._pictures(images, sent_video(request.conversation)),
        }
        if request.adapter:
            if not self.takes_lora():
                raise InvalidRequest(MSG_RUNNER_NO_LORA.format(model=info.name))
            values["lora_task_id"] = self.registry.task_id(request.adapter)
        return RunnerStream(self.client.url, info, build_inputs(info, values),
                            max(self.client.stall_timeout, WHOLE_REPLY_STALL_SECONDS), notes=(note,) if note else ())
