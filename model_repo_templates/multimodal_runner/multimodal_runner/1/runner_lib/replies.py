"""One reply through the runner: the request's settings put on `args` (the runner reads them there), the picture
loaded as run.py loads it, and the era's own run() called with its recorded parameters in order."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from .eras import Era
from .requests import RunnerRequest, decode_image

MSG_NO_LORA = "This runner ({era} era) takes no LoRA task (its args have no lora_task_uids); send no lora_task_id."
MSG_FAMILY_NO_LORA = ("This family's runner takes no LoRA task (takes_lora is false: {family}'s path in the runner "
                      "passes none); send no lora_task_id.")
MSG_NO_VIDEO = "This runner ({era} era) has no method that loads a video."
WHOLE_REPLY, STREAMED = "whole reply", "streamed"
# [V] setup_inputs builds one chat message per batch slot for these types from input_text[idx] and raw_image[idx], so
# both go as lists of batch_size (a bare string would be read a character per slot, a bare image not at all)
PER_SLOT_TYPES = ("qwen2_vl",)


@dataclass(frozen=True)
class Reply:
    """The runner's answer, cut at the first stop string, and why it ended."""

    text: str
    finish_reason: str  # stop | length


def apply_settings(runner, era: Era, request: RunnerRequest, family_takes_lora: bool = True, family: str = "") -> None:
    """Set this request's sampling and LoRA task on runner.args (calls are serialised by the caller). A LoRA task
    is refused where the era's args have no lora_task_uids, or the family's path in the runner passes none
    (`family_takes_lora` False: the deployment's takes_lora is false)."""
    for name in era.sampling_args:
        if name in request.sampling:
            setattr(runner.args, name, request.sampling[name])
    if request.lora_task_id is not None:
        if not family_takes_lora:
            raise ValueError(MSG_FAMILY_NO_LORA.format(family=family or "this family"))
        if not era.takes_lora:
            raise ValueError(MSG_NO_LORA.format(era=era.name))
        runner.args.lora_task_uids = [str(request.lora_task_id)] * int(runner.args.batch_size)
    elif era.takes_lora:
        runner.args.lora_task_uids = None


def load_picture(runner, era: Era, request: RunnerRequest):
    """The runner's picture input: the first image as a PIL image, a video read by the era's own loader from a
    temporary file (it takes a path), or None for a text-only request."""
    if request.video is not None:
        name = era.method_name("load_video")
        if name is None:
            raise ValueError(MSG_NO_VIDEO.format(era=era.name))
        handle, path = tempfile.mkstemp(suffix=".video")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(request.video)
            values = {"image_path": None, "video_path": path}
            return getattr(runner, name)(*(values[p] for p in era.params("load_video")))
        finally:
            os.unlink(path)
    return decode_image(request.images[0]) if request.images else None


def per_slot(runner, text: str | None, picture):
    """(text, picture) as the runner's setup_inputs reads them: one of each per batch slot for PER_SLOT_TYPES (None
    stays None: the runner's own default text, its own refusal of no picture), else as they are."""
    if str(getattr(runner, "model_type", "")) not in PER_SLOT_TYPES:
        return text, picture
    slots = int(runner.args.batch_size)
    return tuple(None if value is None else [value] * slots for value in (text, picture))


def call_run(runner, era: Era, text: str | None, picture, max_new_tokens: int) -> str:
    """runner.run(...) with exactly the era's parameters, positionally in the recorded order; the first beam of the
    first batch slot of its output_text."""
    text, picture = per_slot(runner, text, picture)
    values = {"input_text": text, "input_image": picture, "input_audio": None, "max_new_tokens": max_new_tokens}
    result = runner.run(*(values[p] for p in era.params("run")))
    output = result[era.run_returns.index("output_text")]
    while isinstance(output, list | tuple):
        output = output[0] if output else ""
    return "" if output is None else str(output)


def finish(text: str, stop: tuple[str, ...], tokens: int | None, max_new_tokens: int) -> Reply:
    """Cut at the first stop string (finish "stop"); else "length" when the reply took every token it could."""
    hits = [(text.find(s), s) for s in stop if s in text]
    if hits:
        return Reply(text[:min(hits)[0]], "stop")
    return Reply(text, "length" if tokens is not None and tokens >= max_new_tokens else "stop")


def answer(runner, era: Era, request: RunnerRequest, family_takes_lora: bool = True, family: str = "") -> Reply:
    """The whole reply to `request` through the era's run() (the runner itself never streams: facts §2;
    streaming.py streams where the runner's LLM runner can)."""
    apply_settings(runner, era, request, family_takes_lora, family)
    picture = load_picture(runner, era, request)
    text = call_run(runner, era, request.text or None, picture, request.max_tokens)
    tokenizer = getattr(runner, "tokenizer", None)
    tokens = len(tokenizer.encode(text, add_special_tokens=False)) if hasattr(tokenizer, "encode") else None
    return finish(text, request.stop, tokens, request.max_tokens)
