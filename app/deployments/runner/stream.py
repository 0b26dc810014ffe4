"""A reply from the runner model: each response's text_output is new text (one piece per response when the runner
streams, the whole reply in one response when it cannot), and the final response carries the figures:
finish_reason, reply_mode ("streamed" or "whole reply"), runner_era and prompt_format; beside them the request's
own notes (a setting sent in place of one the runner cannot read)."""

from __future__ import annotations

from dataclasses import replace

from app.triton.client import ModelInfo, TokenStream

FIGURES = ("finish_reason", "reply_mode", "runner_era", "prompt_format")


class RunnerStream(TokenStream):
    """`details` holds the figures the model returned with the reply."""

    def __init__(self, url: str, info: ModelInfo, inputs: list, stall_timeout: float, notes: tuple[str, ...] = ()):
        self.details: dict[str, str] = {}
        self.notes = notes  # what the request sent differently from what was asked (and why)
        super().__init__(url, replace(info, accumulated_text=False, engine_model=None), inputs, stall_timeout)

    def _observe(self, result) -> None:
        for name in FIGURES:
            value = result.as_numpy(name)
            if value is not None and value.size:
                item = value.reshape(-1)[0]
                self.details[name] = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)

    def details_line(self) -> str:
        """'finished: stop · streamed · runner era late · prompt: kosmos-2 ...'; empty when nothing came."""
        d = self.details
        parts = [f"finished: {d['finish_reason']}"] if d.get("finish_reason") else []
        parts += [d[k] for k in ("reply_mode",) if d.get(k)]
        parts += [f"runner era {d['runner_era']}"] if d.get("runner_era") else []
        parts += [f"prompt: {d['prompt_format']}"] if d.get("prompt_format") else []
        return " · ".join(parts + list(self.notes))

    @property
    def whole_reply(self) -> bool:
        """The runner sent its reply at once (its LLM cannot stream: encoder-decoder, mllama, an earlier era)."""
        return self.details.get("reply_mode") == "whole reply"

    @property
    def finish_reason(self) -> str | None:
        reason = self.details.get("finish_reason")
        return None if self.cancelled or not reason else reason
