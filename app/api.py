"""Gradio API endpoints (scriptable with gradio_client): the chat panel's job without the browser."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr

from app.chat_logic import open_stream, validate_user_text
from app.client import SamplingParams
from app.constants import SAMPLING_LIMITS
from app.context import AppContext
from app.errors import ChatError

D = {name: spec[0] for name, spec in SAMPLING_LIMITS.items()}


def register(ctx: AppContext) -> None:
    """Add the `generate` endpoint to the current Blocks."""

    def generate(text: str, max_tokens: int = D["max_tokens"], temperature: float = D["temperature"],
                 top_p: float = D["top_p"], top_k: int = D["top_k"], seed: int = D["seed"],
                 repetition_penalty: float = D["repetition_penalty"], system_prompt: str = "",
                 adapter: str = "") -> Iterator[str]:
        """Stream the reply to one user message; each update is the whole reply so far.

        `adapter` names a LoRA adapter of the adapters folder; empty for the base model.
        """
        stream = None
        try:
            text = validate_user_text(text)
            params = SamplingParams(max_tokens=int(max_tokens), temperature=float(temperature), top_k=int(top_k),
                                    top_p=float(top_p), repetition_penalty=float(repetition_penalty), seed=int(seed))
            stream = open_stream(ctx, [{"role": "user", "content": text}], params, system_prompt or None,
                                 adapter or None)
            for _ in stream:
                yield stream.text.lstrip()
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        finally:
            if stream is not None:
                stream.cancel()  # no-op when finished; frees the server when the caller went away

    gr.api(generate, api_name="generate")
