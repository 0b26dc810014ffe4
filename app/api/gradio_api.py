"""Gradio API endpoints (scriptable with gradio_client): the chat panel's job without the browser."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import gradio as gr
from gradio.data_classes import FileData

from app.adapters.registry import BASE_MODEL
from app.chat.context import AppContext
from app.chat.sampling import message_text, sampling_params
from app.chat.throttle import throttled
from app.chat.turns import check_new_turn, open_stream, validate_user_text
from app.core.constants import SAMPLING_LIMITS
from app.core.errors import ChatError, InvalidRequest

D = {name: spec[0] for name, spec in SAMPLING_LIMITS.items()}
UPLOAD_ROOTS = [Path(tempfile.gettempdir()) / "gradio"]


def uploaded_paths(files: list | None) -> list[str]:
    """Local paths of files uploaded through the API; anything outside Gradio's upload folder is refused."""
    roots = [Path(os.environ["GRADIO_TEMP_DIR"])] if os.environ.get("GRADIO_TEMP_DIR") else UPLOAD_ROOTS
    paths = []
    for item in files or []:
        raw = item.get("path") if isinstance(item, dict) else getattr(item, "path", None)
        path = Path(str(raw or "")).resolve()
        if not raw or not any(path.is_relative_to(root.resolve()) for root in roots):
            raise InvalidRequest("Images must be uploaded with the request (gradio_client.handle_file(path)).")
        paths.append(str(path))
    return paths


def register(ctx: AppContext) -> None:
    """Add the `generate` endpoint to the current Blocks."""

    def generate(text: str, max_tokens: int = D["max_tokens"], temperature: float = D["temperature"],
                 top_p: float = D["top_p"], top_k: int = D["top_k"], seed: int = D["seed"],
                 repetition_penalty: float = D["repetition_penalty"], system_prompt: str = "",
                 adapter: str = "", images: list[FileData] | None = None) -> Iterator[str]:
        """Stream the reply to one user message; each update is the whole reply so far.

        `adapter` names a LoRA adapter of the adapters folder; empty for the base model.
        `images` are image files sent with the message (up to the deployment's max_num_images).
        """
        stream = None
        try:
            text = validate_user_text(message_text(text))
            params = sampling_params(max_tokens=max_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                                     repetition_penalty=repetition_penalty, seed=seed)
            paths = uploaded_paths(images)
            if paths:
                check_new_turn(ctx, text, paths)
            chosen = None if not adapter or adapter == BASE_MODEL else adapter  # API callers may name the label
            stream = open_stream(ctx, [{"role": "user", "content": text}], params, system_prompt or None,
                                 chosen, images=paths)
            yield from throttled(stream, lambda: stream.text.lstrip())
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        finally:
            if stream is not None:
                stream.cancel()  # no-op when finished; frees the server when the caller went away

    gr.api(generate, api_name="generate")
