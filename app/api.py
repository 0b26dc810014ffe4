"""Gradio API endpoints (scriptable with gradio_client): the chat panel's job without the browser."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr

from app.chat_logic import stream_reply, validate_user_text
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
                 request: gr.Request = None) -> Iterator[str]:
        """Stream the reply to one user message; each update is the whole reply so far."""
        try:
            text = validate_user_text(text)
            params = SamplingParams(max_tokens=int(max_tokens), temperature=float(temperature), top_k=int(top_k),
                                    top_p=float(top_p), repetition_penalty=float(repetition_penalty), seed=int(seed))
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        session = request.session_hash if request is not None and request.session_hash else "api"
        for history in stream_reply(ctx, f"api-{session}", [{"role": "user", "content": text}], params,
                                    system_prompt or None):
            reply = history[-1]["content"]
            if reply.startswith("⚠️ ") or "\n\n⚠️ " in reply:
                raise gr.Error(reply.split("⚠️ ", 1)[1], print_exception=False)
            yield reply

    gr.api(generate, api_name="generate")
