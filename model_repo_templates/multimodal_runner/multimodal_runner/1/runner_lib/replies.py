"""One reply through the runner: the request's settings put on `args` (the runner reads them there on every call),
the picture loaded as the release loads it, and the release's own run() called with its recorded parameters in
order."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .eras import Era
from .requests import RunnerRequest, decode_image

MSG_NO_LORA = "This runner ({era} era) takes no LoRA task (its args have no lora_task_uids); send no lora_task_id."
MSG_FAMILY_NO_LORA = ("This family's runner takes no LoRA task (takes_lora is false: {family}'s path in the runner "
                      "passes none); send no lora_task_id.")
MSG_NO_VIDEO = "This runner ({era} era) has no method that loads a video."
MSG_VIDEO_ONLY = ("{model_type}'s runner reads a video, not a picture (its setup_inputs decodes a video file); send "
                  "video_bytes.")
WHOLE_REPLY, STREAMED = "whole reply", "streamed"


@dataclass(frozen=True)
class Reply:
    """The runner's answer, cut at the first stop string, and why it ended."""

    text: str
    finish_reason: str  # stop | length


def apply_settings(runner, era: Era, request: RunnerRequest, family_takes_lora: bool = True, family: str = "",
                   defaults: dict | None = None) -> None:
    """Set every sampling field and the LoRA task on runner.args for this request (calls are serialised by the
    caller): the request's value, else `defaults` (the deployment's: the era's recorded defaults with its
    runner_settings), so nothing a request set leaks into the next one (the runner reads them all on every generate,
    runner_eras.yaml sampling_args). A LoRA task is refused where the era's args have no lora_task_uids, or the
    family's path in the runner passes none (`family_takes_lora` False: the deployment's takes_lora is false)."""
    defaults = era.sampling_defaults() if defaults is None else defaults
    for name in era.sampling_args:
        setattr(runner.args, name, request.sampling.get(name, defaults.get(name)))
    if request.lora_task_id is not None:
        if not family_takes_lora:
            raise ValueError(MSG_FAMILY_NO_LORA.format(family=family or "this family"))
        if not era.takes_lora:
            raise ValueError(MSG_NO_LORA.format(era=era.name))
        runner.args.lora_task_uids = [str(request.lora_task_id)] * int(runner.args.batch_size)
    elif era.takes_lora:
        runner.args.lora_task_uids = None


def sized(runner, era: Era, image):
    """`image` at the size the release gives its model type's pictures (runner_eras.yaml picture_sizes: qwen2_vl's
    504x504), else as it is."""
    size = era.picture_sizes.get(str(getattr(runner, "model_type", "")))
    return image if size is None or image.size == tuple(size) else image.resize(tuple(size))


@contextmanager
def picture(runner, era: Era, request: RunnerRequest) -> Iterator:
    """The runner's picture input while the reply is made: the first image as a PIL image (sized as the release
    sizes it), a video as the release's loader gives it, or None for a text-only request.

    A video is written to a temporary file and args.video_path set to it before the loader runs: video-neva's
    loader returns the path, whose frames run() decodes later; LLaVA-OneVision's reads args.video_path and its
    setup_inputs picks video mode from it (runner_eras.yaml, eras). So the file stays until the caller leaves this
    block (after run()), and args.video_path is None again for the next request (and for every image request)."""
    runner.args.video_path = None
    model_type = str(getattr(runner, "model_type", ""))
    if request.video is None and request.images and model_type in era.video_only_types:
        raise ValueError(MSG_VIDEO_ONLY.format(model_type=model_type))
    if request.video is None:
        yield sized(runner, era, decode_image(request.images[0])) if request.images else None
        return
    name = era.method_name("load_video")
    if name is None:
        raise ValueError(MSG_NO_VIDEO.format(era=era.name))
    handle, path = tempfile.mkstemp(suffix=".video")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(request.video)
        runner.args.video_path = path
        values = {"image_path": None, "video_path": path}
        yield getattr(runner, name)(*(values[p] for p in era.params("load_video")))
    finally:
        runner.args.video_path = None
        os.unlink(path)


def per_slot(runner, era: Era, text: str | None, picture):
    """(text, picture) as the release's setup_inputs reads them: one of each per batch slot for its per_slot_types
    (1.x's qwen2_vl; None stays None: the runner's own default text, its own refusal of no picture), else as they
    are (0.16's qwen2_vl takes the bare text and picture)."""
    if str(getattr(runner, "model_type", "")) not in era.per_slot_types:
        return text, picture
    slots = int(runner.args.batch_size)
    return tuple(None if value is None else [value] * slots for value in (text, picture))


def call_run(runner, era: Era, text: str | None, picture, max_new_tokens: int) -> str:
    """runner.run(...) with exactly the era's parameters, positionally in the recorded order; the first beam of the
    first batch slot of its output_text."""
    text, picture = per_slot(runner, era, text, picture)
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


def answer(runner, era: Era, request: RunnerRequest, family_takes_lora: bool = True, family: str = "",
           defaults: dict | None = None) -> Reply:
    """The whole reply to `request` through the era's run() (the runner itself never streams: facts §2;
    streaming.py streams where the runner's LLM runner can)."""
    apply_settings(runner, era, request, family_takes_lora, family, defaults)
    with picture(runner, era, request) as given:
        text = call_run(runner, era, request.text or None, given, request.max_tokens)
    tokenizer = getattr(runner, "tokenizer", None)
    tokens = len(tokenizer.encode(text, add_special_tokens=False)) if hasattr(tokenizer, "encode") else None
    return finish(text, request.stop, tokens, request.max_tokens)
